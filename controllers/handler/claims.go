package handler

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/types"
)

// claims are the launcher folders this handler has taken on, kept as empty
// files Config.StateDir/claims/<folder> beside the state records: the
// folder of each VMI it has seen on its node, and of each migration to its
// node. The sweep removes a claimed folder as soon as nothing needs it, and
// leaves the others alone until they are old (unclaimedGrace): on a
// machine that runs several clusters' nodes (virt-local's tests, a
// developer's cluster next to them) the folder of another cluster's
// launcher is not this handler's to remove while that launcher starts or
// its handler reads how it ended.
type claims struct{ dir string }

func (c claims) path(folder types.UID) string { return filepath.Join(c.dir, string(folder)) }

// claim records folder; claiming again changes nothing.
func (c claims) claim(folder types.UID) error {
	if c.claimed(folder) {
		return nil
	}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return fmt.Errorf("handler: claims folder: %w", err)
	}
	f, err := os.OpenFile(c.path(folder), os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("handler: claiming launcher folder %s: %w", folder, err)
	}
	return f.Close()
}

// claimed reports whether folder was claimed.
func (c claims) claimed(folder types.UID) bool {
	_, err := os.Lstat(c.path(folder))
	return err == nil
}

// release forgets folder.
func (c claims) release(folder types.UID) error {
	if err := os.Remove(c.path(folder)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("handler: releasing launcher folder %s: %w", folder, err)
	}
	return nil
}

// list returns every claimed folder.
func (c claims) list() ([]types.UID, error) {
	ents, err := os.ReadDir(c.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("handler: claims folder: %w", err)
	}
	out := make([]types.UID, 0, len(ents))
	for _, e := range ents {
		out = append(out, types.UID(e.Name()))
	}
	return out, nil
}

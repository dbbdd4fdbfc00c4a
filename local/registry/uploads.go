package registry

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// uploads are the blob uploads in progress, each a file in dir that the
// blob's chunks are appended to and hashed as they come; it becomes a blob
// once the client gives the digest and the content has it. Uploads live
// as long as the process: a new registry empties dir.
type uploads struct {
	dir string

	mu sync.Mutex
	m  map[string]*upload
}

// upload is one blob upload.
type upload struct {
	mu   sync.Mutex // the client sends chunks in order; this keeps a confused one from interleaving them
	f    *os.File
	hash hash.Hash
	size int64
}

func newUploads(dir string) (*uploads, error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("registry: uploads of an earlier run: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	return &uploads{dir: dir, m: map[string]*upload{}}, nil
}

// start begins an upload.
func (u *uploads) start() (string, *upload, error) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	f, err := os.Create(filepath.Join(u.dir, id))
	if err != nil {
		return "", nil, fmt.Errorf("registry: new upload: %w", err)
	}
	up := &upload{f: f, hash: sha256.New()}
	u.mu.Lock()
	u.m[id] = up
	u.mu.Unlock()
	return id, up, nil
}

// get finds the upload id.
func (u *uploads) get(id string) (*upload, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	up, ok := u.m[id]
	return up, ok
}

// end forgets the upload id and removes its file if it is still there (it
// is not once committed).
func (u *uploads) end(id string) {
	u.mu.Lock()
	up, ok := u.m[id]
	delete(u.m, id)
	u.mu.Unlock()
	if ok {
		up.f.Close()
		_ = os.Remove(up.f.Name())
	}
}

// close ends every upload (the registry stops).
func (u *uploads) close() {
	u.mu.Lock()
	ids := make([]string, 0, len(u.m))
	for id := range u.m {
		ids = append(ids, id)
	}
	u.mu.Unlock()
	for _, id := range ids {
		u.end(id)
	}
}

// write appends r to the upload; up.mu is held.
func (up *upload) write(r io.Reader) error {
	n, err := io.Copy(io.MultiWriter(up.f, up.hash), r)
	up.size += n
	return err
}

// digest is the digest of what was written so far; up.mu is held.
func (up *upload) digest() v1.Hash {
	return v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(up.hash.Sum(nil))}
}

// commit makes the upload the blob of digest want once its content has
// that digest; up.mu is held. The caller ends the upload either way.
func (up *upload) commit(s *storage, want v1.Hash) error {
	if got := up.digest(); got != want {
		return errDigestInvalid("the upload's content has digest %s, not %s", got, want)
	}
	if err := up.f.Sync(); err != nil {
		return fmt.Errorf("registry: upload of %s: %w", want, err)
	}
	if err := up.f.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("registry: upload of %s: %w", want, err)
	}
	return s.commitBlob(up.f.Name(), want)
}

package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrImageNotFound is returned (wrapped, with the reference) by an
// ImageStore that does not have an image. The pod then shows the container
// waiting with reason ErrImagePull and a message naming the reference.
var ErrImageNotFound = errors.New("image not found")

// ImageStore gives image volumes (Kubernetes ImageVolume,
// volume.image.reference; launcher pods use them for containerDisks) their
// contents as a host folder, mounted read-only into the pod.
type ImageStore interface {
	// Mount returns the folder holding the unpacked image reference.
	Mount(ctx context.Context, reference string) (folder string, err error)
}

// DirImageStore is an ImageStore over unpacked images in a folder: the image
// REPOSITORY:TAG is Root/REPOSITORY/TAG, REPOSITORY@DIGEST is
// Root/REPOSITORY/DIGEST (e.g. Root/registry:5000/vm/disk/latest,
// Root/vm/disk/sha256:0123...); a reference without tag or digest means
// :latest.
type DirImageStore struct {
	Root string
}

// Mount implements ImageStore.
func (s DirImageStore) Mount(_ context.Context, reference string) (string, error) {
	rel, err := imagePath(reference)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(s.Root, rel)
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return "", fmt.Errorf("%w: %q is not in the local image store (no folder %s)", ErrImageNotFound, reference, dir)
	}
	return dir, nil
}

// imagePath is the relative folder of a reference in a DirImageStore.
func imagePath(ref string) (string, error) {
	bad := func(why string) (string, error) {
		return "", fmt.Errorf("image reference %q: %s", ref, why)
	}
	if ref == "" {
		return bad("empty")
	}
	repo, version := ref, "latest"
	if i := strings.Index(ref, "@"); i >= 0 {
		repo, version = ref[:i], ref[i+1:]
	} else if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		repo, version = ref[:i], ref[i+1:]
	}
	if repo == "" || version == "" {
		return bad("no repository or no tag")
	}
	for _, part := range append(strings.Split(repo, "/"), version) {
		if part == "" || part == "." || part == ".." {
			return bad("empty, . or .. path component")
		}
	}
	return filepath.Join(repo, version), nil
}

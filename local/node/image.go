package node

import (
	"context"
	"errors"
)

// ErrImageNotFound is returned (wrapped, with the reference) by an
// ImageStore that does not have an image. The pod then shows the container
// waiting with reason ErrImagePull and a message naming the reference.
var ErrImageNotFound = errors.New("image not found")

// ImageStore gives image volumes (Kubernetes ImageVolume,
// volume.image.reference; launcher pods use them for containerDisks) their
// contents as a host folder, mounted read-only into the pod. The default is
// a RegistryImageStore over Config.Registry.
type ImageStore interface {
	// Mount returns the folder holding the unpacked image reference.
	Mount(ctx context.Context, reference string) (folder string, err error)
}

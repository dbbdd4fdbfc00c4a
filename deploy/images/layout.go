package images

import (
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// RefName is the OCI annotation that names an image of an image layout
// ("virt-launcher:devel"), as `make images` writes it.
const RefName = "org.opencontainers.image.ref.name"

// AppendToLayout adds img to the OCI image layout at path p, named ref.
func AppendToLayout(p layout.Path, ref string, img v1.Image) error {
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{RefName: ref})); err != nil {
		return fmt.Errorf("images: %s: %w", ref, err)
	}
	return nil
}

// FromLayout returns the image named ref (NAME:TAG) of the OCI image
// layout in folder dir, such as the one `make images` writes.
func FromLayout(dir, ref string) (v1.Image, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("images: layout %s: %w", dir, err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		return nil, fmt.Errorf("images: layout %s: %w", dir, err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("images: layout %s: %w", dir, err)
	}
	for _, d := range m.Manifests {
		if d.Annotations[RefName] == ref {
			img, err := p.Image(d.Digest)
			if err != nil {
				return nil, fmt.Errorf("images: layout %s: %s: %w", dir, ref, err)
			}
			return img, nil
		}
	}
	return nil, fmt.Errorf("images: layout %s has no image %s", dir, ref)
}

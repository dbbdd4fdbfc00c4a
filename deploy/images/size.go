package images

import (
	"io"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Sizes returns an image's digest and the sum of its layers' compressed
// and unpacked sizes.
func Sizes(img v1.Image) (digest v1.Hash, compressed, unpacked int64, err error) {
	if digest, err = img.Digest(); err != nil {
		return
	}
	layers, err := img.Layers()
	if err != nil {
		return
	}
	for _, l := range layers {
		n, err := l.Size()
		if err != nil {
			return digest, 0, 0, err
		}
		compressed += n
		rc, err := l.Uncompressed()
		if err != nil {
			return digest, 0, 0, err
		}
		m, err := io.Copy(io.Discard, rc)
		rc.Close()
		if err != nil {
			return digest, 0, 0, err
		}
		unpacked += m
	}
	return digest, compressed, unpacked, nil
}

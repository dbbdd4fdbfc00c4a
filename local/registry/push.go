package registry

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The owner and mode of a containerDisk's files, as KubeVirt documents
// them: the qemu user and group of its launcher image (107), read-only.
const (
	diskOwner   = 107
	diskMode    = 0o440
	diskDirMode = 0o555
)

// ContainerDisk returns the image KubeVirt expects of a containerDisk
// holding the disk image file disk (qcow2 or raw): one layer with the
// folder /disk and the file /disk/NAME (NAME being disk's base name), both
// owned by 107:107, the file mode 0440; an OCI image for linux on this
// machine's architecture. Times are fixed, so the same file always makes
// the same image digest. The file is read when the image's layer is, and
// must not change until then.
func ContainerDisk(disk string) (v1.Image, error) {
	st, err := os.Stat(disk)
	if err != nil {
		return nil, fmt.Errorf("registry: containerDisk: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("registry: containerDisk %s: not a regular file", disk)
	}
	base := filepath.Base(disk)
	open := func() (io.ReadCloser, error) {
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(writeDiskTar(pw, disk, base, st.Size())) }()
		return pr, nil
	}
	layer, err := tarball.LayerFromOpener(open, tarball.WithMediaType(types.OCILayer),
		tarball.WithCompressionLevel(gzip.BestSpeed))
	if err != nil {
		return nil, fmt.Errorf("registry: containerDisk %s: %w", disk, err)
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.ConfigFile(img, &v1.ConfigFile{OS: "linux", Architecture: runtime.GOARCH,
		RootFS: v1.RootFS{Type: "layers"}})
	if err != nil {
		return nil, fmt.Errorf("registry: containerDisk %s: %w", disk, err)
	}
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer,
		History: v1.History{CreatedBy: "virtkit containerDisk " + base, Created: v1.Time{Time: time.Unix(0, 0).UTC()}}})
	if err != nil {
		return nil, fmt.Errorf("registry: containerDisk %s: %w", disk, err)
	}
	return img, nil
}

// writeDiskTar writes the containerDisk layer of the file disk, size
// bytes, as disk/base.
func writeDiskTar(w io.Writer, disk, base string, size int64) error {
	f, err := os.Open(disk)
	if err != nil {
		return err
	}
	defer f.Close()
	epoch := time.Unix(0, 0)
	tw := tar.NewWriter(w)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "disk/", Mode: diskDirMode,
		Uid: diskOwner, Gid: diskOwner, ModTime: epoch}); err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "disk/" + base, Mode: diskMode, Size: size,
		Uid: diskOwner, Gid: diskOwner, ModTime: epoch}); err != nil {
		return err
	}
	if n, err := io.Copy(tw, f); err != nil {
		return err
	} else if n != size {
		return fmt.Errorf("%s changed while being read: %d bytes, then %d", disk, size, n)
	}
	return tw.Close()
}

// Push writes img to the registry as ref over plain HTTP, without
// credentials: it is meant for a registry on loopback, such as one Start
// serves. When ref already names an image of img's digest nothing is sent
// (pushed is false). It returns img's digest.
func Push(ctx context.Context, ref string, img v1.Image) (digest v1.Hash, pushed bool, err error) {
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return v1.Hash{}, false, fmt.Errorf("registry: push: %w", err)
	}
	digest, err = img.Digest()
	if err != nil {
		return v1.Hash{}, false, fmt.Errorf("registry: push %s: %w", ref, err)
	}
	head, err := remote.Head(r, remote.WithContext(ctx))
	if err == nil && head.Digest == digest {
		return digest, false, nil
	}
	if err != nil && !isNotFound(err) {
		return v1.Hash{}, false, fmt.Errorf("registry: push %s: %w", ref, err)
	}
	if err := remote.Write(r, img, remote.WithContext(ctx)); err != nil {
		return v1.Hash{}, false, fmt.Errorf("registry: push %s: %w", ref, err)
	}
	return digest, true, nil
}

// PushContainerDisk pushes the containerDisk image of the disk image file
// disk (see ContainerDisk) to ref, as Push does.
func PushContainerDisk(ctx context.Context, ref, disk string) (digest v1.Hash, pushed bool, err error) {
	img, err := ContainerDisk(disk)
	if err != nil {
		return v1.Hash{}, false, err
	}
	return Push(ctx, ref, img)
}

// isNotFound reports whether err is a registry's 404.
func isNotFound(err error) bool {
	var te *transport.Error
	return errors.As(err, &te) && te.StatusCode == http.StatusNotFound
}

package handler

import (
	"fmt"
	"os"
	"path"

	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/storage"
)

// containerDiskFacts finds, in the pod, the disk file a containerDisk's
// image provides. The VMI controller mounts the image (a Kubernetes image
// volume) read-only at the layout's ContainerDisksDir/<volume>; the disk is the file
// the volume's path names, else the one file in the image's /disk folder,
// as KubeVirt's containerDisk images lay it out. Paths are the pod's.
func containerDiskFacts(podFS storage.FS, layout storage.Layout, volume string, src *virtv1.ContainerDiskSource) (storage.VolumeFacts, error) {
	dirs := layout.ContainerDisksDir
	if dirs == "" {
		dirs = storage.DefaultLayout().ContainerDisksDir
	}
	mount := path.Join(dirs, volume)
	if src.Path != "" {
		return storage.VolumeFacts{Path: path.Join(mount, src.Path)}, nil
	}
	dir := path.Join(mount, "disk")
	ents, err := podFS.ReadDir(dir)
	if err != nil {
		return storage.VolumeFacts{}, fmt.Errorf("image %s: %w", src.Image, err)
	}
	var files []string
	for _, e := range ents {
		if e.Type().IsRegular() || e.Type()&os.ModeSymlink != 0 {
			files = append(files, e.Name())
		}
	}
	if len(files) != 1 {
		return storage.VolumeFacts{}, fmt.Errorf("image %s: want exactly one disk file in /disk, found %d %v (set path to choose)", src.Image, len(files), files)
	}
	return storage.VolumeFacts{Path: path.Join(dir, files[0])}, nil
}

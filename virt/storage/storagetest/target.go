package storagetest

import (
	"testing"

	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/storage"
)

// Target is one storage.Interface under test and what the suite needs to
// know about it.
type Target struct {
	// Storage is the implementation under test.
	Storage storage.Interface
	// Pod lays out what the launcher pod holds for vmi before the first
	// start (claims mounted, container disk images) and returns its facts.
	Pod func(t *testing.T, vmi *virtv1.VirtualMachineInstance) storage.Pod
	// InPlace lists what is in the pod now, sorted: files and folders on a
	// real file system, the images marked prepared in a fake. The suite
	// compares it before and after Prepare and Release.
	InPlace func(t *testing.T) []string
	// Exists reports whether the image at path is in place.
	Exists func(t *testing.T, path string) bool

	Caps Capabilities
}

// Capabilities say what an implementation checks. For each missing one the
// suite checks that the input is accepted instead of refused.
type Capabilities struct {
	// ReadsFiles: Plan reads the pod's files, so a containerDisk whose
	// image is missing fails with storage.ErrNotFound naming the volume.
	ReadsFiles bool
}

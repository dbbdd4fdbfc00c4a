package fake_test

import (
	"slices"
	"testing"

	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/storage"
	"github.com/virtkit/virtkit/virt/storage/fake"
	"github.com/virtkit/virtkit/virt/storage/storagetest"
)

// The fake passes the contract the real Manager passes, with its prepared
// images standing for the pod's files.
func TestContract(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storagetest.Target {
		s := fake.New()
		return storagetest.Target{
			Storage: s,
			Pod: func(*testing.T, *virtv1.VirtualMachineInstance) storage.Pod {
				return storage.Pod{Volumes: map[string]storage.VolumeFacts{"data": {CapacityBytes: 64 << 20}}}
			},
			InPlace: func(*testing.T) []string { return s.PreparedImages() },
			Exists: func(_ *testing.T, path string) bool {
				return slices.Contains(s.PreparedImages(), path)
			},
		}
	})
}

package vmi

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/virt/spec"
	"github.com/virtkit/virtkit/virt/storage/dvspec"
)

// BlockVolumes reads the claims of vmi's persistentVolumeClaim and
// dataVolume volumes (the launcher pod's, not the hotpluggable ones) and
// names those in Block mode, for PodOptions.BlockVolumes. A claim that does
// not exist yet counts as a Filesystem one: its pod waits for it either way.
func BlockVolumes(ctx context.Context, reader client.Reader, vmi *virtv1.VirtualMachineInstance) (map[string]bool, error) {
	var block map[string]bool
	for i := range vmi.Spec.Volumes {
		v := &vmi.Spec.Volumes[i]
		if spec.Hotpluggable(v) {
			continue
		}
		name := ""
		switch {
		case v.PersistentVolumeClaim != nil:
			name = v.PersistentVolumeClaim.ClaimName
		case v.DataVolume != nil:
			name = v.DataVolume.Name
		default:
			continue
		}
		var pvc corev1.PersistentVolumeClaim
		err := reader.Get(ctx, client.ObjectKey{Namespace: vmi.Namespace, Name: name}, &pvc)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("VirtualMachineInstance %s/%s spec.volumes[%d] (%s): claim %s: %w", vmi.Namespace, vmi.Name, i, v.Name, name, err)
		}
		if dvspec.IsBlock(&pvc) {
			if block == nil {
				block = map[string]bool{}
			}
			block[v.Name] = true
		}
	}
	return block, nil
}

package snapshot

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/virtkit/virtkit/virt/storage/snapshot"
)

// lock makes vm the source of the snapshot named name: status
// snapshotInProgress names it and the source finalizer keeps the VM.
// It reports why it cannot yet ("" once locked).
func (b *base) lock(ctx context.Context, vm *virtv1.VirtualMachine, name string, online bool, claims []string) (string, error) {
	if p := vm.Status.SnapshotInProgress; p != nil && *p != name {
		return fmt.Sprintf("Source not locked: snapshot %q in progress", *p), nil
	}
	if p := vm.Status.RestoreInProgress; p != nil {
		return fmt.Sprintf("Source not locked: restore %q in progress", *p), nil
	}
	if !online {
		// A stopped VM's claims may still be written by another pod (an
		// importer filling a DataVolume): wait until none uses them.
		users, err := b.podsUsing(ctx, vm.Namespace, claims)
		if err != nil {
			return "", err
		}
		if len(users) > 0 {
			return fmt.Sprintf("Source not locked: source is offline but %d pods use its claims (%s)", len(users), users[0]), nil
		}
	}
	if vm.Status.SnapshotInProgress == nil {
		vm.Status.SnapshotInProgress = &name
		if err := b.client.Status().Update(ctx, vm); err != nil {
			return "", fmt.Errorf("locking VirtualMachine %s/%s: %w", vm.Namespace, vm.Name, err)
		}
	}
	if !controllerutil.ContainsFinalizer(vm, snapshot.SourceFinalizer) {
		controllerutil.AddFinalizer(vm, snapshot.SourceFinalizer)
		if err := b.client.Update(ctx, vm); err != nil {
			return "", fmt.Errorf("locking VirtualMachine %s/%s: %w", vm.Namespace, vm.Name, err)
		}
	}
	return "", nil
}

// unlock lets vm go, if the snapshot named name holds it.
func (b *base) unlock(ctx context.Context, vm *virtv1.VirtualMachine, name string) error {
	if vm == nil || vm.Status.SnapshotInProgress == nil || *vm.Status.SnapshotInProgress != name {
		return nil
	}
	if controllerutil.ContainsFinalizer(vm, snapshot.SourceFinalizer) {
		controllerutil.RemoveFinalizer(vm, snapshot.SourceFinalizer)
		if err := b.client.Update(ctx, vm); err != nil {
			return fmt.Errorf("unlocking VirtualMachine %s/%s: %w", vm.Namespace, vm.Name, err)
		}
	}
	vm.Status.SnapshotInProgress = nil
	if err := b.client.Status().Update(ctx, vm); err != nil {
		return fmt.Errorf("unlocking VirtualMachine %s/%s: %w", vm.Namespace, vm.Name, err)
	}
	return nil
}

// podsUsing names the pods of namespace that are not finished and mount
// one of claims.
func (b *base) podsUsing(ctx context.Context, namespace string, claims []string) ([]string, error) {
	want := map[string]bool{}
	for _, c := range claims {
		want[c] = true
	}
	var pods corev1.PodList
	if err := b.client.List(ctx, &pods, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	var out []string
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil && want[v.PersistentVolumeClaim.ClaimName] {
				out = append(out, p.Name)
				break
			}
		}
	}
	return out, nil
}

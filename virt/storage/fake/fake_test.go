package fake_test

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/storage"
	"github.com/virtkit/virtkit/virt/storage/fake"
)

func demo() *virtv1.VirtualMachineInstance {
	vmi := &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "vm", Namespace: "ns"}}
	vmi.Spec.Volumes = []virtv1.Volume{
		{Name: "data", VolumeSource: virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}}},
		{Name: "root", VolumeSource: virtv1.VolumeSource{ContainerDisk: &virtv1.ContainerDiskSource{Image: "x"}}},
	}
	vmi.Spec.Domain.Devices.Disks = []virtv1.Disk{{Name: "data"}, {Name: "root"}}
	return vmi
}

// A handler's storage steps run against the fake: plan, prepare, release,
// and an injected failure.
func TestFake(t *testing.T) {
	ctx := context.Background()
	s := fake.New()
	var _ storage.Interface = s
	plan, err := s.Plan(ctx, demo(), storage.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	if plan["root"].Kind != storage.KindContainerDisk || plan["data"].Kind != storage.KindPersistentVolumeClaim {
		t.Fatalf("plan %+v", plan)
	}
	if err := s.Prepare(ctx, demo(), storage.Pod{}, plan); err != nil {
		t.Fatal(err)
	}
	if !s.Prepared(plan["root"].Path) || !s.Prepared(plan["data"].Path) {
		t.Error("prepared images not recorded")
	}
	if err := s.Release(ctx, plan); err != nil {
		t.Fatal(err)
	}
	if s.Prepared(plan["root"].Path) || !s.Prepared(plan["data"].Path) {
		t.Error("Release must forget the overlay and keep the claim")
	}
	boom := errors.New("boom")
	s.FailNext(fake.OpPrepare, boom)
	if err := s.Prepare(ctx, demo(), storage.Pod{}, plan); !errors.Is(err, boom) {
		t.Errorf("injected failure: %v", err)
	}
	var ops []string
	for _, c := range s.Calls() {
		ops = append(ops, c.Op)
	}
	if want := []string{"plan", "prepare", "release", "prepare"}; len(ops) != len(want) || ops[0] != want[0] || ops[3] != want[3] {
		t.Errorf("calls %v, want %v", ops, want)
	}
}

package storage_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/storage"
)

// Plan a VMI's storage in a launcher pod, prepare it, and release it when
// the VMI ends.
func ExampleManager_Plan() {
	ctx := context.Background()
	pod, err := os.MkdirTemp("", "launcher-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(pod)
	claim := filepath.Join(pod, "claims", "data") // where the kubelet mounted the claim
	if err := os.MkdirAll(claim, 0o755); err != nil {
		log.Fatal(err)
	}

	vmi := &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "default"}}
	vmi.Spec.Volumes = []virtv1.Volume{
		{Name: "data", VolumeSource: virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "demo-data"}}}},
		{Name: "ci", VolumeSource: virtv1.VolumeSource{CloudInitNoCloud: &virtv1.CloudInitNoCloudSource{
			UserData: "#cloud-config\npassword: demo\n"}}},
	}
	vmi.Spec.Domain.Devices.Disks = []virtv1.Disk{{Name: "data"}, {Name: "ci"}}

	m := storage.New(storage.WithLayout(storage.Layout{EphemeralDir: filepath.Join(pod, "ephemeral")}))
	facts := storage.Pod{Volumes: map[string]storage.VolumeFacts{"data": {Path: claim, CapacityBytes: 1 << 30}}}
	plan, err := m.Plan(ctx, vmi, facts)
	if err != nil {
		log.Fatal(err) // e.g. volume "data" (spec.volumes[0].persistentVolumeClaim): ...: image larger than its volume
	}
	for _, name := range []string{"data", "ci"} {
		p := plan[name]
		rel, _ := filepath.Rel(pod, p.Path)
		fmt.Printf("%s: %s %s %s capacity=%d create=%v readOnly=%v\n", name, p.Kind, p.Format, rel, p.CapacityBytes, p.Create, p.ReadOnly)
	}
	if err := m.Prepare(ctx, vmi, facts, plan); err != nil {
		log.Fatal(err)
	}
	// ... the domain runs ...
	if err := m.Release(ctx, plan); err != nil {
		log.Fatal(err)
	}
	_, err = os.Stat(plan["data"].Path)
	fmt.Println("disk.img kept:", err == nil)
	// Output:
	// data: persistentVolumeClaim raw claims/data/disk.img capacity=1013972992 create=true readOnly=false
	// ci: cloudInitNoCloud raw ephemeral/cloud-init-data/default/demo/noCloud.iso capacity=0 create=true readOnly=true
	// disk.img kept: true
}

package export_test

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	exportv1 "kubevirt.io/api/export/v1beta1"

	exportctl "github.com/virtkit/virtkit/controllers/export"
	"github.com/virtkit/virtkit/virt/storage/export"
)

// The server pod and Service of an export of one disk claim.
func ExampleServerPod() {
	vme := &exportv1.VirtualMachineExport{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "my-export"},
		Spec: exportv1.VirtualMachineExportSpec{Source: corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "rootdisk"}}}
	vols := []export.Volume{{Claim: "rootdisk", Path: export.MountPath("rootdisk"), Content: export.DiskImage}}
	pod, err := exportctl.ServerPod(vme, vols, exportctl.PodParams{Image: "virtkit/virt-exportserver:devel",
		CertSecret: export.CertSecretName(vme.Name), TokenSecret: export.TokenSecretName(vme.Name),
		Deadline: time.Date(2026, 12, 6, 20, 0, 0, 0, time.UTC)})
	if err != nil {
		panic(err)
	}
	for _, m := range pod.Spec.Containers[0].VolumeMounts {
		fmt.Println(pod.Name, "mounts", m.MountPath, "read-only:", m.ReadOnly)
	}
	svc := exportctl.Service(vme)
	fmt.Println(svc.Name, svc.Spec.Ports[0].Port, "->", svc.Spec.Ports[0].TargetPort.IntValue())
	// Output:
	// virt-export-my-export mounts /cert read-only: true
	// virt-export-my-export mounts /token read-only: true
	// virt-export-my-export mounts /export-volumes/rootdisk read-only: true
	// virt-export-my-export 443 -> 8443
}

package vmi

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	virtv1 "kubevirt.io/api/core/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/controllers/conditions"
	"github.com/virtkit/virtkit/virt/storage/backendstorage"
)

// TestBackendStorageClaim: a VMI with a persistent vTPM and no storage
// class to keep it in gets no pod, and its Synchronized condition says
// why; once a default class exists, whose StorageProfile offers
// ReadWriteMany, its claim is made in that class with that mode, labelled
// and owned as KubeVirt's, mounted by the pod and named in the volume
// status. A claim of KubeVirt's older unlabelled name is used as it is.
func TestBackendStorageClaim(t *testing.T) {
	cl := startCluster(t)
	ctx := context.Background()
	tpm := func(v *virtv1.VirtualMachineInstance) {
		v.Spec.Domain.Devices.TPM = &virtv1.TPMDevice{Persistent: ptr.To(true)}
	}

	ns := cl.namespace(t, "statestorage")
	key := cl.createVMI(t, ns, tpm)
	cl.waitVMI(t, key, "Synchronized false, saying there is no storage class", func(v *virtv1.VirtualMachineInstance) bool {
		c := conditions.VMI().Find(v.Status.Conditions, virtv1.VirtualMachineInstanceSynchronized)
		return c != nil && c.Status == corev1.ConditionFalse && c.Reason == ReasonFailedCreate && strings.Contains(c.Message, "no storage class")
	})
	if pods := cl.pods(t, ns); len(pods) != 0 {
		t.Fatalf("%d pods without a class for the state", len(pods))
	}

	// The profile first: the controller, retrying, makes the claim as
	// soon as the class exists.
	fs := corev1.PersistentVolumeFilesystem
	profile := &cdiv1.StorageProfile{ObjectMeta: metav1.ObjectMeta{Name: "state"}}
	must(t, cl.c.Create(ctx, profile))
	profile.Status.ClaimPropertySets = []cdiv1.ClaimPropertySet{{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}, VolumeMode: &fs}}
	must(t, cl.c.Status().Update(ctx, profile))
	class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "state",
		Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}}, Provisioner: "example.com/state"}
	must(t, cl.c.Create(ctx, class))

	pod := cl.waitPod(t, ns)
	name := StateClaimOf(pod)
	claim := &corev1.PersistentVolumeClaim{}
	must(t, cl.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, claim))
	v := cl.vmi(t, key)
	if !strings.HasPrefix(name, "persistent-state-for-vmi1-") || claim.Labels[backendstorage.LabelVM] != "vmi1" ||
		ptr.Deref(claim.Spec.StorageClassName, "") != "state" || claim.Spec.AccessModes[0] != corev1.ReadWriteMany ||
		!metav1.IsControlledBy(claim, v) || claim.Spec.Resources.Requests.Storage().Cmp(resource.MustParse(backendstorage.Size)) != 0 {
		t.Errorf("claim %s: labels %v, class %v, modes %v, owners %+v, size %v", name, claim.Labels, claim.Spec.StorageClassName,
			claim.Spec.AccessModes, claim.OwnerReferences, claim.Spec.Resources.Requests)
	}
	cl.waitVMI(t, key, "the volume status naming "+name, func(v *virtv1.VirtualMachineInstance) bool {
		return backendstorage.ClaimName(&v.Status) == name
	})

	legacyNS := cl.namespace(t, "statelegacy")
	legacy := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: legacyNS, Name: backendstorage.LegacyName("vmi1")},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Mi")}}}}
	must(t, cl.c.Create(ctx, legacy))
	cl.createVMI(t, legacyNS, tpm)
	if got := StateClaimOf(cl.waitPod(t, legacyNS)); got != legacy.Name {
		t.Errorf("the pod mounts %q, want KubeVirt's older claim %s", got, legacy.Name)
	}
	var claims corev1.PersistentVolumeClaimList
	must(t, cl.c.List(ctx, &claims, client.InNamespace(legacyNS)))
	if len(claims.Items) != 1 {
		t.Errorf("%d claims beside the older one: none is to be made", len(claims.Items)-1)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

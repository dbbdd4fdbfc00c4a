package vm

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/virt/storage/dvspec"
)

func dvTemplate(name string) virtv1.DataVolumeTemplateSpec {
	return virtv1.DataVolumeTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"disk": name}},
		Spec: cdiv1.DataVolumeSpec{
			Source: &cdiv1.DataVolumeSource{HTTP: &cdiv1.DataVolumeSourceHTTP{URL: "https://images.example.com/" + name + ".qcow2"}},
			Storage: &cdiv1.StorageSpec{Resources: k8sv1.VolumeResourceRequirements{
				Requests: k8sv1.ResourceList{k8sv1.ResourceStorage: resource.MustParse("1Gi")}}},
		},
	}
}

func withDataVolumes(vm *virtv1.VirtualMachine, templated []string, plain ...string) *virtv1.VirtualMachine {
	for _, n := range templated {
		vm.Spec.DataVolumeTemplates = append(vm.Spec.DataVolumeTemplates, dvTemplate(n))
	}
	for _, n := range append(append([]string(nil), templated...), plain...) {
		vm.Spec.Template.Spec.Volumes = append(vm.Spec.Template.Spec.Volumes, virtv1.Volume{Name: n,
			VolumeSource: virtv1.VolumeSource{DataVolume: &virtv1.DataVolumeSource{Name: n}}})
	}
	return vm
}

func dvIn(name string, phase cdiv1.DataVolumePhase, conds ...cdiv1.DataVolumeCondition) *cdiv1.DataVolume {
	return &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: cdiv1.DataVolumeStatus{Phase: phase, Conditions: conds}}
}

func TestDataVolumeFor(t *testing.T) {
	vm := withDataVolumes(testVM("ns", rs(virtv1.RunStrategyAlways), nil), []string{"root"})
	vm.UID = "vm-uid"
	vm.Spec.Template.Spec.PriorityClassName = "high"
	dv := DataVolumeFor(vm, &vm.Spec.DataVolumeTemplates[0])
	if dv.Namespace != "ns" || dv.Name != "root" || !metav1.IsControlledBy(dv, vm) {
		t.Errorf("DataVolume %s/%s owners %+v, want ns/root controlled by the VM", dv.Namespace, dv.Name, dv.OwnerReferences)
	}
	want := map[string]string{"disk": "root", virtv1.CreatedByLabel: "vm-uid"}
	if diff := cmp.Diff(want, dv.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if dv.Annotations[dvspec.AnnAllowClaimAdoption] != "true" || dv.Spec.PriorityClassName != "high" {
		t.Errorf("annotations %v, priority class %q", dv.Annotations, dv.Spec.PriorityClassName)
	}
	if _, ok := vm.Spec.DataVolumeTemplates[0].Labels[virtv1.CreatedByLabel]; ok {
		t.Error("DataVolumeFor changed the VM's template")
	}
}

func TestDataVolumesOf(t *testing.T) {
	runningFalse := func(reason string) cdiv1.DataVolumeCondition {
		return cdiv1.DataVolumeCondition{Type: cdiv1.DataVolumeRunning, Status: k8sv1.ConditionFalse, Reason: reason, Message: "dial tcp: refused"}
	}
	vm := withDataVolumes(testVM("ns", rs(virtv1.RunStrategyAlways), nil), []string{"root"}, "data")
	for _, tc := range []struct {
		name             string
		dvs              []*cdiv1.DataVolume
		ready, provision bool
		err              string
	}{
		{name: "none yet", ready: false},
		{name: "importing", dvs: []*cdiv1.DataVolume{dvIn("root", cdiv1.ImportInProgress)}, provision: true},
		{name: "templated done, plain importing", dvs: []*cdiv1.DataVolume{dvIn("root", cdiv1.Succeeded), dvIn("data", cdiv1.ImportScheduled)},
			ready: true, provision: true},
		{name: "all done", dvs: []*cdiv1.DataVolume{dvIn("root", cdiv1.Succeeded), dvIn("data", cdiv1.Succeeded)}, ready: true},
		{name: "waiting for a consumer", dvs: []*cdiv1.DataVolume{dvIn("root", cdiv1.WaitForFirstConsumer)}, ready: true},
		{name: "failed", dvs: []*cdiv1.DataVolume{dvIn("root", cdiv1.Failed)}, provision: true, err: "DataVolume root is in Failed phase"},
		{name: "retrying", dvs: []*cdiv1.DataVolume{dvIn("root", cdiv1.ImportInProgress, runningFalse("Error"))}, provision: true,
			err: "DataVolume root importer has stopped running due to an error: dial tcp: refused"},
		{name: "creating is no error", dvs: []*cdiv1.DataVolume{dvIn("root", cdiv1.ImportScheduled, runningFalse("ContainerCreating"))}, provision: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			byName := map[string]*cdiv1.DataVolume{}
			for _, dv := range tc.dvs {
				byName[dv.Name] = dv
			}
			got := DataVolumesOf(vm, byName)
			errText := ""
			if got.Err != nil {
				errText = got.Err.Error()
			}
			if got.Ready != tc.ready || got.Provisioning != tc.provision || errText != tc.err {
				t.Errorf("DataVolumesOf = %+v, want ready=%v provisioning=%v err=%q", got, tc.ready, tc.provision, tc.err)
			}
		})
	}
}

// testDataVolumeTemplates: the VM makes the DataVolumes of its templates,
// owned by it, shows Provisioning and starts no VMI until they are filled,
// shows DataVolumeError for a failed one, and starts once all have
// Succeeded.
func testDataVolumeTemplates(t *testing.T, cl *cluster) {
	vm := withDataVolumes(testVM(cl.namespace(t, "dvtemplates"), rs(virtv1.RunStrategyAlways), nil), []string{"root"})
	if err := cl.c.Create(context.Background(), vm); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(vm)
	dvKey := client.ObjectKey{Namespace: key.Namespace, Name: "root"}
	dv := &cdiv1.DataVolume{}
	eventually(t, "the template's DataVolume", func() (bool, string) {
		err := cl.c.Get(context.Background(), dvKey, dv)
		return err == nil, fmt.Sprint(err)
	})
	vm = cl.getVM(t, key)
	if !metav1.IsControlledBy(dv, vm) || dv.Spec.Source.HTTP.URL != "https://images.example.com/root.qcow2" {
		t.Errorf("DataVolume owners %+v, source %+v", dv.OwnerReferences, dv.Spec.Source)
	}
	setDV := func(phase cdiv1.DataVolumePhase) {
		t.Helper()
		if err := cl.c.Get(context.Background(), dvKey, dv); err != nil {
			t.Fatal(err)
		}
		dv.Status = cdiv1.DataVolumeStatus{Phase: phase, Conditions: []cdiv1.DataVolumeCondition{{Type: cdiv1.DataVolumeBound, Status: k8sv1.ConditionTrue}}}
		if err := cl.c.Status().Update(context.Background(), dv); err != nil {
			t.Fatal(err)
		}
	}
	setDV(cdiv1.ImportInProgress)
	cl.waitVM(t, key, virtv1.VirtualMachineStatusProvisioning, nil)
	consistently(t, "no VMI while the DataVolume fills", time.Second, func() (bool, string) {
		return cl.vmi(t, key) == nil, "a VMI exists"
	})
	setDV(cdiv1.Failed)
	cl.waitVM(t, key, virtv1.VirtualMachineStatusDataVolumeError, nil)
	setDV(cdiv1.Succeeded)
	vmi := cl.waitVMI(t, key, "")
	found := false
	for _, v := range vmi.Spec.Volumes {
		found = found || (v.DataVolume != nil && v.DataVolume.Name == "root")
	}
	if !found {
		t.Errorf("VMI volumes %+v: no dataVolume root", vmi.Spec.Volumes)
	}
	if err := cl.c.Get(context.Background(), dvKey, dv); err != nil || !strings.HasPrefix(dv.Labels[virtv1.CreatedByLabel], string(vm.UID)) {
		t.Errorf("DataVolume labels %v (%v)", dv.Labels, err)
	}
}

// testWaitingForVolumeBinding: a VM set to run whose claim is not bound
// shows WaitingForVolumeBinding, and moves on once the claim binds (its
// change wakes the VM).
func testWaitingForVolumeBinding(t *testing.T, cl *cluster) {
	ctx := context.Background()
	ns := cl.namespace(t, "binding")
	pvc := &k8sv1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "disk"},
		Spec: k8sv1.PersistentVolumeClaimSpec{AccessModes: []k8sv1.PersistentVolumeAccessMode{k8sv1.ReadWriteOnce},
			Resources: k8sv1.VolumeResourceRequirements{Requests: k8sv1.ResourceList{k8sv1.ResourceStorage: resource.MustParse("1Gi")}}}}
	if err := cl.c.Create(ctx, pvc); err != nil {
		t.Fatal(err)
	}
	vm := testVM(ns, rs(virtv1.RunStrategyAlways), nil)
	vm.Spec.Template.Spec.Domain.Devices.Disks = []virtv1.Disk{{Name: "disk"}}
	vm.Spec.Template.Spec.Volumes = []virtv1.Volume{{Name: "disk", VolumeSource: virtv1.VolumeSource{
		PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{PersistentVolumeClaimVolumeSource: k8sv1.PersistentVolumeClaimVolumeSource{ClaimName: "disk"}}}}}
	if err := cl.c.Create(ctx, vm); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(vm)
	cl.waitVM(t, key, virtv1.VirtualMachineStatusWaitingForVolumeBinding, nil)
	pvc.Status = k8sv1.PersistentVolumeClaimStatus{Phase: k8sv1.ClaimBound}
	if err := cl.c.Status().Update(ctx, pvc); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the VM past WaitingForVolumeBinding", func() (bool, string) {
		got := cl.getVM(t, key)
		return got.Status.PrintableStatus != virtv1.VirtualMachineStatusWaitingForVolumeBinding, string(got.Status.PrintableStatus)
	})
}

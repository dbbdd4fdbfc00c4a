package admission_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clonev1 "kubevirt.io/api/clone/v1beta1"
	virtv1 "kubevirt.io/api/core/v1"
	poolv1 "kubevirt.io/api/pool/v1beta1"
	vmsnapshotv1 "kubevirt.io/api/snapshot/v1beta1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	ctrladmission "sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/virtapi/admission"
)

const ownAccount = "system:serviceaccount:kubevirt:kubevirt-apiserver"

// review builds the request the apiserver sends for obj (and old, on
// update) from user.
func review(t *testing.T, user string, obj, old runtime.Object) ctrladmission.Request {
	t.Helper()
	raw := func(o runtime.Object) runtime.RawExtension {
		if o == nil {
			return runtime.RawExtension{}
		}
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		return runtime.RawExtension{Raw: b}
	}
	kind := "VirtualMachineInstance"
	switch obj.(type) {
	case *virtv1.VirtualMachine:
		kind = "VirtualMachine"
	case *virtv1.VirtualMachineInstanceReplicaSet:
		kind = "VirtualMachineInstanceReplicaSet"
	case *poolv1.VirtualMachinePool:
		kind = poolv1.VirtualMachinePoolKind
	case *cdiv1.DataVolume:
		kind = "DataVolume"
	case *vmsnapshotv1.VirtualMachineSnapshot:
		kind = "VirtualMachineSnapshot"
	case *vmsnapshotv1.VirtualMachineRestore:
		kind = "VirtualMachineRestore"
	case *clonev1.VirtualMachineClone:
		kind = "VirtualMachineClone"
	}
	op := admissionv1.Create
	if old != nil {
		op = admissionv1.Update
	}
	return ctrladmission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: op, Namespace: "default", Name: obj.(metav1.Object).GetName(),
		Kind:     metav1.GroupVersionKind{Group: "kubevirt.io", Version: "v1", Kind: kind},
		UserInfo: authenticationv1.UserInfo{Username: user},
		Object:   raw(obj), OldObject: raw(old),
	}}
}

// refusals returns the fields a verdict refuses, or nil when it allows.
func refusals(t *testing.T, resp ctrladmission.Response) []string {
	t.Helper()
	if resp.Allowed {
		return nil
	}
	if resp.Result == nil || resp.Result.Details == nil {
		t.Fatalf("refused without field causes: %+v", resp.Result)
	}
	out := []string{}
	for _, c := range resp.Result.Details.Causes {
		out = append(out, string(c.Type)+" "+c.Field)
	}
	return out
}

func hotplugVolume(name string) virtv1.Volume {
	return virtv1.Volume{Name: name, VolumeSource: virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
		Hotpluggable: true, PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}}
}

// Users may not set the labels that tie a VMI to a node, an owner or a
// migration; virtkit's own accounts may. A VM's template is held to the
// same rule, since its labels become the VMI's.
func TestReservedLabelsAreRefusedToUsers(t *testing.T) {
	v := admission.NewValidator(scheme.New(), admission.WithPrivilegedUsers(ownAccount))
	ctx := context.Background()
	forged := minimalVMI("forged")
	forged.Labels = map[string]string{virtv1.MigrationJobLabel: "someone-elses-migration", "app": "web"}

	if diff := cmp.Diff([]string{"FieldValueForbidden metadata.labels[kubevirt.io/migrationJobUID]"},
		refusals(t, v.Handle(ctx, review(t, "alice", forged, nil)))); diff != "" {
		t.Errorf("a user creating a VMI with a reserved label (-want +got):\n%s", diff)
	}
	if got := refusals(t, v.Handle(ctx, review(t, ownAccount, forged, nil))); got != nil {
		t.Errorf("virtkit's own account refused: %v", got)
	}

	stored := minimalVMI("stored")
	stored.Labels = map[string]string{virtv1.NodeNameLabel: "node-a"}
	moved := stored.DeepCopy()
	moved.Labels[virtv1.NodeNameLabel] = "node-b"
	if diff := cmp.Diff([]string{"FieldValueForbidden metadata.labels[kubevirt.io/nodeName]"},
		refusals(t, v.Handle(ctx, review(t, "alice", moved, stored)))); diff != "" {
		t.Errorf("a user changing kubevirt.io/nodeName (-want +got):\n%s", diff)
	}
	relabelled := stored.DeepCopy()
	relabelled.Labels["app"] = "web"
	if got := refusals(t, v.Handle(ctx, review(t, "alice", relabelled, stored))); got != nil {
		t.Errorf("a user adding an own label next to a kept reserved one: %v", got)
	}

	vm := &virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "vm", Namespace: "default"},
		Spec: virtv1.VirtualMachineSpec{RunStrategy: new(virtv1.RunStrategyHalted), Template: &virtv1.VirtualMachineInstanceTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{virtv1.CreatedByLabel: "uid-of-another-vmi"}}, Spec: minimalVMI("x").Spec}}}
	if diff := cmp.Diff([]string{"FieldValueForbidden spec.template.metadata.labels[kubevirt.io/created-by]"},
		refusals(t, v.Handle(ctx, review(t, "alice", vm, nil)))); diff != "" {
		t.Errorf("a user's VM template with a reserved label (-want +got):\n%s", diff)
	}
}

// A VM being deleted must shed its finalizers whatever its spec has
// become: the cluster's settings may have changed since it was stored.
func TestAVMBeingDeletedStaysUpdatable(t *testing.T) {
	v := admission.NewValidator(scheme.New())
	ctx := context.Background()
	vm := &virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "vm", Namespace: "default", Finalizers: []string{"example.com/hold"}},
		Spec: virtv1.VirtualMachineSpec{RunStrategy: new(virtv1.VirtualMachineRunStrategy("NoLongerValid")),
			Template: &virtv1.VirtualMachineInstanceTemplateSpec{Spec: minimalVMI("x").Spec}}}
	upd := vm.DeepCopy()
	upd.Finalizers = nil
	if got := refusals(t, v.Handle(ctx, review(t, "alice", upd, vm))); len(got) == 0 {
		t.Fatalf("the check is vacuous: an invalid VM that is not being deleted passed")
	}
	now := metav1.Now()
	vm.DeletionTimestamp, upd.DeletionTimestamp = &now, &now
	if got := refusals(t, v.Handle(ctx, review(t, "alice", upd, vm))); got != nil {
		t.Errorf("removing the finalizer of a VM being deleted: refused %v", got)
	}
}

// virtkit's own accounts change a running VMI's spec only as hotplug does,
// and what they write is validated: virt-api's account carries no request
// past the checks.
func TestOwnAccountsChangeOnlyHotpluggedVolumes(t *testing.T) {
	v := admission.NewValidator(scheme.New(), admission.WithPrivilegedUsers(ownAccount))
	ctx := context.Background()
	running := minimalVMI("running")
	running.Spec.Volumes = append(running.Spec.Volumes, hotplugVolume("old"))
	running.Spec.Domain.Devices.Disks = append(running.Spec.Domain.Devices.Disks, virtv1.Disk{Name: "old"})
	running.Spec.Domain.CPU = &virtv1.CPU{Sockets: 1, MaxSockets: 4}
	running.Spec.Domain.Memory = &virtv1.Memory{Guest: new(resource.MustParse("1Gi")), MaxGuest: new(resource.MustParse("4Gi"))}

	for _, c := range []struct {
		name   string
		change func(*virtv1.VirtualMachineInstanceSpec)
		user   string
		want   []string
	}{
		// A change hotplug may make goes on to validation.
		{name: "add a hotplugged claim with its disk", user: ownAccount, change: func(s *virtv1.VirtualMachineInstanceSpec) {
			s.Volumes = append(s.Volumes, hotplugVolume("data"))
			s.Domain.Devices.Disks = append(s.Domain.Devices.Disks, virtv1.Disk{Name: "data", DiskDevice: virtv1.DiskDevice{Disk: &virtv1.DiskTarget{Bus: "scsi"}}})
		}},
		{name: "remove a hotplugged claim with its disk", user: ownAccount, change: func(s *virtv1.VirtualMachineInstanceSpec) {
			s.Volumes, s.Domain.Devices.Disks = s.Volumes[:1], s.Domain.Devices.Disks[:1]
		}},
		{name: "shorten the grace period", user: ownAccount, change: func(s *virtv1.VirtualMachineInstanceSpec) {
			s.TerminationGracePeriodSeconds = new(int64(0))
		}},
		{name: "a host disk is not hotplugged", user: ownAccount, change: func(s *virtv1.VirtualMachineInstanceSpec) {
			s.Volumes = append(s.Volumes, virtv1.Volume{Name: "host", VolumeSource: virtv1.VolumeSource{HostDisk: &virtv1.HostDisk{Path: "/etc/shadow", Type: virtv1.HostDiskExists}}})
			s.Domain.Devices.Disks = append(s.Domain.Devices.Disks, virtv1.Disk{Name: "host"})
		}, want: []string{"FieldValueForbidden spec.volumes[2]", "FieldValueForbidden spec.domain.devices.disks[2]"}},
		{name: "the boot volume is not hotplugged and stays", user: ownAccount, change: func(s *virtv1.VirtualMachineInstanceSpec) {
			s.Volumes[0].ContainerDisk.Image = "attacker/image:1"
		}, want: []string{"FieldValueForbidden spec.volumes[0]"}},
		{name: "a non-hotplugged volume is not removed", user: ownAccount, change: func(s *virtv1.VirtualMachineInstanceSpec) {
			s.Volumes, s.Domain.Devices.Disks = s.Volumes[1:], s.Domain.Devices.Disks[1:]
		}, want: []string{"FieldValueForbidden spec.volumes", "FieldValueForbidden spec.domain.devices.disks"}},
		{name: "nothing else changes", user: ownAccount, change: func(s *virtv1.VirtualMachineInstanceSpec) {
			s.Hostname = "other"
		}, want: []string{"FieldValueForbidden spec"}},
		// LiveUpdate: the VM controller carries these over.
		{name: "the node selector follows the VM's", user: ownAccount, change: func(s *virtv1.VirtualMachineInstanceSpec) {
			s.NodeSelector = map[string]string{"kubernetes.io/hostname": "other"}
		}},
		{name: "sockets grow within maxSockets", user: ownAccount, change: func(s *virtv1.VirtualMachineInstanceSpec) {
			s.Domain.CPU.Sockets = 2
		}},
		{name: "sockets past maxSockets", user: ownAccount, change: func(s *virtv1.VirtualMachineInstanceSpec) {
			s.Domain.CPU.Sockets = 5
		}, want: []string{"FieldValueInvalid spec.domain.cpu.sockets"}},
		{name: "sockets do not shrink", user: ownAccount, change: func(s *virtv1.VirtualMachineInstanceSpec) {
			s.Domain.CPU.Sockets = 0
		}, want: []string{"FieldValueInvalid spec.domain.cpu.sockets"}},
		{name: "maxSockets does not change", user: ownAccount, change: func(s *virtv1.VirtualMachineInstanceSpec) {
			s.Domain.CPU.MaxSockets, s.Domain.CPU.Sockets = 8, 2
		}, want: []string{"FieldValueForbidden spec"}},
		{name: "guest memory grows within maxGuest", user: ownAccount, change: func(s *virtv1.VirtualMachineInstanceSpec) {
			s.Domain.Memory.Guest = new(resource.MustParse("2Gi"))
		}},
		{name: "guest memory past maxGuest", user: ownAccount, change: func(s *virtv1.VirtualMachineInstanceSpec) {
			s.Domain.Memory.Guest = new(resource.MustParse("8Gi"))
		}, want: []string{"FieldValueInvalid spec.domain.memory.guest"}},
		{name: "a hotplugged disk must be valid", user: ownAccount, change: func(s *virtv1.VirtualMachineInstanceSpec) {
			s.Volumes = append(s.Volumes, hotplugVolume("data"))
			s.Domain.Devices.Disks = append(s.Domain.Devices.Disks, virtv1.Disk{Name: "data", DiskDevice: virtv1.DiskDevice{Disk: &virtv1.DiskTarget{Bus: "nosuchbus"}}})
		}, want: []string{"FieldValueNotSupported spec.domain.devices.disks[2].disk.bus"}},
		{name: "a user changes nothing", user: "alice", change: func(s *virtv1.VirtualMachineInstanceSpec) {
			s.Volumes = append(s.Volumes, hotplugVolume("data"))
			s.Domain.Devices.Disks = append(s.Domain.Devices.Disks, virtv1.Disk{Name: "data"})
		}, want: []string{"FieldValueForbidden spec"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			upd := running.DeepCopy()
			c.change(&upd.Spec)
			if diff := cmp.Diff(c.want, refusals(t, v.Handle(ctx, review(t, c.user, upd, running)))); diff != "" {
				t.Errorf("refused fields (-want +got):\n%s", diff)
			}
		})
	}
}

// A replica set is refused with the field at fault: a selector that does
// not match its template, an invalid template, a reserved label the VMIs
// it makes would carry.
func TestReplicaSetsAreValidated(t *testing.T) {
	v := admission.NewValidator(scheme.New(), admission.WithPrivilegedUsers(ownAccount))
	ctx := context.Background()
	rs := func(mutate func(*virtv1.VirtualMachineInstanceReplicaSet)) *virtv1.VirtualMachineInstanceReplicaSet {
		r := &virtv1.VirtualMachineInstanceReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Spec: virtv1.VirtualMachineInstanceReplicaSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Template: &virtv1.VirtualMachineInstanceTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}, Spec: minimalVMI("x").Spec}}}
		mutate(r)
		return r
	}
	for _, c := range []struct {
		name   string
		mutate func(*virtv1.VirtualMachineInstanceReplicaSet)
		want   []string
	}{
		{"valid", func(*virtv1.VirtualMachineInstanceReplicaSet) {}, nil},
		{"selector not matching", func(r *virtv1.VirtualMachineInstanceReplicaSet) { r.Spec.Selector.MatchLabels["app"] = "db" },
			[]string{"FieldValueInvalid spec.selector"}},
		{"no template", func(r *virtv1.VirtualMachineInstanceReplicaSet) { r.Spec.Template = nil },
			[]string{"FieldValueRequired spec.template"}},
		{"invalid template", func(r *virtv1.VirtualMachineInstanceReplicaSet) {
			r.Spec.Template.Spec.Domain.Devices.Disks[0].Cache = "unsafe"
		},
			[]string{"FieldValueNotSupported spec.template.spec.domain.devices.disks[0].cache"}},
		{"reserved label", func(r *virtv1.VirtualMachineInstanceReplicaSet) {
			r.Spec.Template.ObjectMeta.Labels[virtv1.NodeNameLabel] = "node-a"
		}, []string{"FieldValueForbidden spec.template.metadata.labels[kubevirt.io/nodeName]"}},
	} {
		if diff := cmp.Diff(c.want, refusals(t, v.Handle(ctx, review(t, "alice", rs(c.mutate), nil)))); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
	// Scaling (an update of spec.replicas) is validated the same way.
	stored := rs(func(*virtv1.VirtualMachineInstanceReplicaSet) {})
	scaled := stored.DeepCopy()
	scaled.Spec.Replicas = new(int32(-2))
	if diff := cmp.Diff([]string{"FieldValueInvalid spec.replicas"}, refusals(t, v.Handle(ctx, review(t, "alice", scaled, stored)))); diff != "" {
		t.Errorf("negative replicas (-want +got):\n%s", diff)
	}
}

// A pool is refused with the field at fault, its VMs' spec where it sits
// in the pool.
func TestPoolsAreValidated(t *testing.T) {
	v := admission.NewValidator(scheme.New(), admission.WithPrivilegedUsers(ownAccount))
	ctx := context.Background()
	pool := func(mutate func(*poolv1.VirtualMachinePool)) *poolv1.VirtualMachinePool {
		p := &poolv1.VirtualMachinePool{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Spec: poolv1.VirtualMachinePoolSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				VirtualMachineTemplate: &poolv1.VirtualMachineTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
					Spec: virtv1.VirtualMachineSpec{RunStrategy: new(virtv1.RunStrategyAlways),
						Template: &virtv1.VirtualMachineInstanceTemplateSpec{Spec: minimalVMI("x").Spec}}}}}
		mutate(p)
		return p
	}
	for _, c := range []struct {
		name   string
		mutate func(*poolv1.VirtualMachinePool)
		want   []string
	}{
		{"valid", func(*poolv1.VirtualMachinePool) {}, nil},
		{"selector not matching", func(p *poolv1.VirtualMachinePool) { p.Spec.Selector.MatchLabels["app"] = "db" },
			[]string{"FieldValueInvalid spec.selector"}},
		{"invalid VM template", func(p *poolv1.VirtualMachinePool) {
			p.Spec.VirtualMachineTemplate.Spec.Template.Spec.Domain.Devices.Disks[0].Cache = "unsafe"
		}, []string{"FieldValueNotSupported spec.virtualMachineTemplate.spec.template.spec.domain.devices.disks[0].cache"}},
		{"reserved label", func(p *poolv1.VirtualMachinePool) {
			p.Spec.VirtualMachineTemplate.Spec.Template.ObjectMeta.Labels = map[string]string{virtv1.NodeNameLabel: "node-a"}
		}, []string{"FieldValueForbidden spec.virtualMachineTemplate.spec.template.metadata.labels[kubevirt.io/nodeName]"}},
		{"autohealing", func(p *poolv1.VirtualMachinePool) {
			p.Spec.Autohealing = &poolv1.VirtualMachinePoolAutohealingStrategy{}
		},
			[]string{"FieldValueForbidden spec.autohealing"}},
	} {
		if diff := cmp.Diff(c.want, refusals(t, v.Handle(ctx, review(t, "alice", pool(c.mutate), nil)))); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
}

// DataVolumes, and VMs' dataVolumeTemplates, are refused at creation for
// what the DataVolume controller could not fill, with the field named; a
// DataVolume's spec cannot change.
func TestDataVolumesAreValidated(t *testing.T) {
	v := admission.NewValidator(scheme.New())
	ctx := context.Background()
	spec := func(url string) cdiv1.DataVolumeSpec {
		return cdiv1.DataVolumeSpec{Source: &cdiv1.DataVolumeSource{HTTP: &cdiv1.DataVolumeSourceHTTP{URL: url}},
			Storage: &cdiv1.StorageSpec{Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	}
	dv := func(url string) *cdiv1.DataVolume {
		return &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Name: "disk", Namespace: "default"}, Spec: spec(url)}
	}
	for _, c := range []struct {
		name     string
		obj, old runtime.Object
		want     []string
	}{
		{"valid", dv("https://example.com/d.qcow2"), nil, nil},
		{"not http", dv("ftp://example.com/d"), nil, []string{"FieldValueInvalid spec.source.http.url"}},
		{"s3", &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Name: "disk"}, Spec: cdiv1.DataVolumeSpec{
			Source: &cdiv1.DataVolumeSource{S3: &cdiv1.DataVolumeSourceS3{URL: "s3://b/k"}}, Storage: spec("").Storage}}, nil,
			[]string{"FieldValueInvalid spec.source.s3"}},
		{"spec changed", dv("https://example.com/other.qcow2"), dv("https://example.com/d.qcow2"), []string{"FieldValueForbidden spec"}},
		{"labels changed", func() *cdiv1.DataVolume {
			d := dv("https://example.com/d.qcow2")
			d.Labels = map[string]string{"a": "b"}
			return d
		}(),
			dv("https://example.com/d.qcow2"), nil},
		{"VM template", func() *virtv1.VirtualMachine {
			vm := &virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "vm", Namespace: "default"}, Spec: virtv1.VirtualMachineSpec{
				RunStrategy: new(virtv1.RunStrategyHalted), Template: &virtv1.VirtualMachineInstanceTemplateSpec{Spec: minimalVMI("x").Spec}}}
			vm.Spec.DataVolumeTemplates = []virtv1.DataVolumeTemplateSpec{{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: spec("gopher://x/y")}}
			vm.Spec.Template.Spec.Volumes = append(vm.Spec.Template.Spec.Volumes, virtv1.Volume{Name: "data",
				VolumeSource: virtv1.VolumeSource{DataVolume: &virtv1.DataVolumeSource{Name: "data"}}})
			vm.Spec.Template.Spec.Domain.Devices.Disks = append(vm.Spec.Template.Spec.Domain.Devices.Disks, virtv1.Disk{Name: "data"})
			return vm
		}(), nil, []string{"FieldValueInvalid spec.dataVolumeTemplates[0].spec.source.http.url"}},
	} {
		if diff := cmp.Diff(c.want, refusals(t, v.Handle(ctx, review(t, "alice", c.obj, c.old)))); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
}

// TestClonesAreAuthorized: a clone from another namespace, by a
// DataVolume or a VM's dataVolumeTemplate, needs create on
// datavolumes/source in cdi.kubevirt.io in the source claim's namespace
// (a DataSource's claim's, when named through one), asked of RBAC for the
// requesting user; same-namespace clones and virtkit's own accounts are
// not asked.
func TestClonesAreAuthorized(t *testing.T) {
	var asked []authorizationv1.ResourceAttributes
	c := fake.NewClientBuilder().WithScheme(scheme.New()).
		WithObjects(&cdiv1.DataSource{ObjectMeta: metav1.ObjectMeta{Namespace: "catalog", Name: "fedora"},
			Spec: cdiv1.DataSourceSpec{Source: cdiv1.DataSourceSource{PVC: &cdiv1.DataVolumeSourcePVC{Namespace: "images", Name: "fedora-41"}}}}).
		WithInterceptorFuncs(interceptor.Funcs{Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			sar, ok := obj.(*authorizationv1.SubjectAccessReview)
			if !ok {
				return cl.Create(ctx, obj, opts...)
			}
			asked = append(asked, *sar.Spec.ResourceAttributes)
			sar.Status.Allowed = sar.Spec.User == "alice" && sar.Spec.ResourceAttributes.Namespace == "images"
			return nil
		}}).Build()
	v := admission.NewValidator(scheme.New(), admission.WithCloneAuthorization(c), admission.WithPrivilegedUsers(ownAccount))
	size := &cdiv1.StorageSpec{Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}
	pvc := func(ns string) cdiv1.DataVolumeSpec {
		return cdiv1.DataVolumeSpec{Source: &cdiv1.DataVolumeSource{PVC: &cdiv1.DataVolumeSourcePVC{Namespace: ns, Name: "golden"}}, Storage: size}
	}
	snap := func(ns string) cdiv1.DataVolumeSpec {
		return cdiv1.DataVolumeSpec{Source: &cdiv1.DataVolumeSource{Snapshot: &cdiv1.DataVolumeSourceSnapshot{Namespace: ns, Name: "golden-snap"}}, Storage: size}
	}
	ref := cdiv1.DataVolumeSpec{SourceRef: &cdiv1.DataVolumeSourceRef{Kind: "DataSource", Namespace: new("catalog"), Name: "fedora"}, Storage: size}
	dv := func(s cdiv1.DataVolumeSpec) *cdiv1.DataVolume {
		return &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Name: "copy", Namespace: "default"}, Spec: s}
	}
	vm := func(s cdiv1.DataVolumeSpec) *virtv1.VirtualMachine {
		vm := &virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "vm", Namespace: "default"}, Spec: virtv1.VirtualMachineSpec{
			RunStrategy: new(virtv1.RunStrategyHalted), Template: &virtv1.VirtualMachineInstanceTemplateSpec{Spec: minimalVMI("x").Spec}}}
		vm.Spec.DataVolumeTemplates = []virtv1.DataVolumeTemplateSpec{{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: s}}
		vm.Spec.Template.Spec.Volumes = append(vm.Spec.Template.Spec.Volumes, virtv1.Volume{Name: "data",
			VolumeSource: virtv1.VolumeSource{DataVolume: &virtv1.DataVolumeSource{Name: "data"}}})
		vm.Spec.Template.Spec.Domain.Devices.Disks = append(vm.Spec.Template.Spec.Domain.Devices.Disks, virtv1.Disk{Name: "data"})
		return vm
	}
	for _, tc := range []struct {
		name, user string
		obj        runtime.Object
		want       []string
		wantAsked  []string // namespaces asked about
	}{
		{name: "same namespace", user: "bob", obj: dv(pvc("default"))},
		{name: "allowed", user: "alice", obj: dv(pvc("images")), wantAsked: []string{"images"}},
		{name: "refused", user: "bob", obj: dv(pvc("images")), want: []string{"FieldValueForbidden spec.source.pvc.namespace"}, wantAsked: []string{"images"}},
		{name: "through a DataSource", user: "bob", obj: dv(ref), want: []string{"FieldValueForbidden spec.sourceRef.namespace"}, wantAsked: []string{"images"}},
		{name: "virtkit's own", user: ownAccount, obj: dv(pvc("images"))},
		{name: "VM template", user: "bob", obj: vm(pvc("images")), want: []string{"FieldValueForbidden spec.dataVolumeTemplates[0].spec.source.pvc.namespace"},
			wantAsked: []string{"images"}},
		{name: "VM template, allowed", user: "alice", obj: vm(pvc("images")), wantAsked: []string{"images"}},
		{name: "a snapshot of another namespace", user: "bob", obj: dv(snap("images")), want: []string{"FieldValueForbidden spec.source.snapshot.namespace"},
			wantAsked: []string{"images"}},
		{name: "a snapshot of another namespace, allowed", user: "alice", obj: dv(snap("images")), wantAsked: []string{"images"}},
		{name: "a snapshot of its own namespace", user: "bob", obj: dv(snap(""))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked = nil
			if diff := cmp.Diff(tc.want, refusals(t, v.Handle(context.Background(), review(t, tc.user, tc.obj, nil)))); diff != "" {
				t.Errorf("refusals (-want +got):\n%s", diff)
			}
			var got []string
			for _, a := range asked {
				if a.Verb != "create" || a.Group != "cdi.kubevirt.io" || a.Resource != "datavolumes" || a.Subresource != "source" {
					t.Errorf("asked %+v, want create on datavolumes/source", a)
				}
				got = append(got, a.Namespace)
			}
			if diff := cmp.Diff(tc.wantAsked, got); diff != "" {
				t.Errorf("namespaces asked about (-want +got):\n%s", diff)
			}
		})
	}
}

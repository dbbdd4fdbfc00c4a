package handler_test

import (
	"context"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/controllers/handler"
	vmictl "github.com/virtkit/virtkit/controllers/vmi"
	"github.com/virtkit/virtkit/virt/domain"
	"github.com/virtkit/virtkit/virt/launcher/contract"
	"github.com/virtkit/virtkit/virt/storage"
)

// recordingBinder is an ImageBinder that records its calls and, on Bind,
// puts the image where the pod's planner looks for it.
type recordingBinder struct {
	mu      sync.Mutex
	binds   []handler.Binding
	unbinds []string
	place   func(handler.Binding)
}

func (b *recordingBinder) Bind(_ context.Context, bd handler.Binding) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.binds = append(b.binds, bd)
	b.place(bd)
	return nil
}

func (b *recordingBinder) Unbind(_ context.Context, launcher types.UID, volume string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.unbinds = append(b.unbinds, string(launcher)+"/"+volume)
	return nil
}

// A hotplugged claim reaches the pod from its attachment pod: Bound while
// there is none, bound into the launcher pod from the CSI volume's
// publication for the attachment pod once it runs, then attached and
// Ready with the attachment pod named; on removal the disk is detached
// and the image unbound, and the volume leaves the status (the VMI
// controller then deletes the attachment pod).
// hotplugNode is a node whose guest vm1 runs and has the claim data-claim
// hotplugged as volume data (read-only if so), with no attachment pod yet;
// binding it puts its image where the pod's planner looks.
func hotplugNode(t *testing.T, readOnly bool) (*fakeNode, *recordingBinder, *virtv1.VirtualMachineInstance, virtv1.Volume) {
	t.Helper()
	bind := &recordingBinder{}
	n := newFakeNode(t,
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-claim", Namespace: "default"},
			Spec:   corev1.PersistentVolumeClaimSpec{VolumeName: "pv-data"},
			Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
		&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-data"},
			Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "example.csi", VolumeHandle: "h1"}}}})
	bind.place = func(handler.Binding) {
		n.files.Images["/var/run/kubevirt-private/vmi-disks/data/disk.img"] = storage.ImageInfo{Format: storage.FormatRaw, VirtualSize: 1 << 30, Length: 1 << 30}
	}
	n.extra = append(n.extra, handler.WithImageBinder(bind))
	n.r = n.handler()
	vmi, _ := n.running("vm1")
	vol := virtv1.Volume{Name: "data", VolumeSource: virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{Hotpluggable: true,
		PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-claim", ReadOnly: readOnly}}}}
	vmi.Spec.Volumes = append(vmi.Spec.Volumes, vol)
	vmi.Spec.Domain.Devices.Disks = append(vmi.Spec.Domain.Devices.Disks, virtv1.Disk{Name: "data",
		DiskDevice: virtv1.DiskDevice{Disk: &virtv1.DiskTarget{Bus: virtv1.DiskBusSCSI}}})
	assert.NilError(t, n.c.Update(context.Background(), vmi))
	return n, bind, vmi, vol
}

// runAttachPod makes the VMI controller's attachment pod for vol, running
// on this node, and returns the launcher pod and the attachment pod's name.
func runAttachPod(t *testing.T, n *fakeNode, vmi *virtv1.VirtualMachineInstance, vol virtv1.Volume, owner bool) (corev1.Pod, string) {
	t.Helper()
	ctx := context.Background()
	var pods corev1.PodList
	assert.NilError(t, n.c.List(ctx, &pods, client.MatchingLabels{virtv1.CreatedByLabel: string(vmi.UID)}))
	assert.Equal(t, len(pods.Items), 1)
	launcherPod := pods.Items[0]
	hp, err := vmictl.AttachPodFor(vmi, &launcherPod, &vol, false, vmictl.PodOptions{LauncherImage: "example/virt-launcher:1"})
	assert.NilError(t, err)
	hp.Spec.NodeName = node
	if !owner {
		hp.Name = "hp-volume-fake0"
		hp.OwnerReferences[0].UID = "someone-else"
	}
	hp.UID = types.UID("hp-uid-" + hp.Name)
	hp.Status.Phase = corev1.PodRunning
	assert.NilError(t, n.c.Create(ctx, hp))
	return launcherPod, hp.Name
}

// A read-only claim's image is brought into the pod before it is planned:
// nothing may make one, so the planner cannot plan it until it is there.
func TestHotplugReadOnlyClaim(t *testing.T) {
	n, bind, vmi, vol := hotplugNode(t, true)
	// The real planner, on the pod's files: it refuses a read-only claim
	// without an image, as the fake does not.
	n.disks.PlanFunc = storage.New(storage.WithInspector(n.files)).Plan
	hot := storage.DefaultLayout().HotplugDir + "/data.img"
	bind.place = func(handler.Binding) {
		n.files.Images[hot] = storage.ImageInfo{Format: storage.FormatRaw, VirtualSize: 1 << 30, Length: 1 << 30}
	}
	launcherPod, hpName := runAttachPod(t, n, vmi, vol, true)
	n.reconcile("vm1")
	want := []handler.Binding{{Launcher: launcherPod.UID, Volume: "data", ReadOnly: true,
		Source: contract.CSIVolumeDir(n.run, types.UID("hp-uid-"+hpName), "pv-data")}}
	if d := cmp.Diff(want, bind.binds); d != "" {
		t.Errorf("binds (-want +got):\n%s", d)
	}
	st := n.vmi("vm1").Status.VolumeStatus
	if len(st) != 2 || st[1].Phase != virtv1.VolumeReady || st[1].Target != "sda" {
		t.Errorf("volume status once bound: %+v, want data Ready on sda", st)
	}
}

func TestHotplugFromAttachmentPod(t *testing.T) {
	n, bind, vmi, vol := hotplugNode(t, false)

	res := n.reconcile("vm1")
	assert.Assert(t, res.RequeueAfter > 0, "waits for the attachment pod")
	// What the claim holds is reported as for any claim (LiveMigratable reads it).
	info := &virtv1.PersistentVolumeClaimInfo{ClaimName: "data-claim", Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}
	want := []virtv1.VolumeStatus{{Name: "root", Target: "vda"}, {Name: "data", Phase: virtv1.VolumeBound,
		Reason: handler.ReasonPVCNotReady, Message: "PVC is in phase Bound", HotplugVolume: &virtv1.HotplugVolumeStatus{}, PersistentVolumeClaimInfo: info}}
	if d := cmp.Diff(want, n.vmi("vm1").Status.VolumeStatus); d != "" {
		t.Errorf("volume status without an attachment pod (-want +got):\n%s", d)
	}

	// The VMI controller's attachment pod, running on this node; and a
	// look-alike someone else made, which is not the launcher pod's.
	launcherPod, hpName := runAttachPod(t, n, vmi, vol, true)
	runAttachPod(t, n, vmi, vol, false)
	n.reconcile("vm1")
	assert.Equal(t, len(bind.binds), 1)
	wantBind := handler.Binding{Launcher: launcherPod.UID, Volume: "data",
		Source: contract.CSIVolumeDir(n.run, types.UID("hp-uid-"+hpName), "pv-data")}
	if d := cmp.Diff(wantBind, bind.binds[0]); d != "" {
		t.Errorf("bind (-want +got):\n%s", d)
	}
	hv := &virtv1.HotplugVolumeStatus{AttachPodName: hpName, AttachPodUID: types.UID("hp-uid-" + hpName)}
	want[1] = virtv1.VolumeStatus{Name: "data", Target: "sda", Phase: virtv1.VolumeReady, Reason: "VolumeReady",
		Message: "Successfully attach hotplugged volume data to VM", HotplugVolume: hv, PersistentVolumeClaimInfo: info}
	if d := cmp.Diff(want, n.vmi("vm1").Status.VolumeStatus); d != "" {
		t.Errorf("volume status once bound (-want +got):\n%s", d)
	}
	n.reconcile("vm1")
	assert.Equal(t, len(bind.binds), 1, "bound again")

	unplug(t, n)
	assert.Assert(t, !attached(t, n), "the disk is still attached")
	assert.DeepEqual(t, bind.unbinds, []string{string(launcherPod.UID) + "/data"})
	assert.DeepEqual(t, n.vmi("vm1").Status.VolumeStatus, []virtv1.VolumeStatus{{Name: "root", Target: "vda"}})
}

// unplug takes hotplugNode's volume out of vm1's spec and reconciles.
func unplug(t *testing.T, n *fakeNode) {
	t.Helper()
	vmi := n.vmi("vm1")
	vmi.Spec.Volumes = vmi.Spec.Volumes[:1]
	vmi.Spec.Domain.Devices.Disks = vmi.Spec.Domain.Devices.Disks[:1]
	assert.NilError(t, n.c.Update(context.Background(), vmi))
	n.reconcile("vm1")
}

// attached reports whether vm1's domain has hotplugNode's disk.
func attached(t *testing.T, n *fakeNode) bool {
	t.Helper()
	doc, err := n.dom.XML(context.Background(), "default_vm1", domain.XMLOptions{})
	assert.NilError(t, err)
	_, ok := handler.RunningDomainOf(doc).Targets["data"]
	return ok
}

// While a migration of the VMI is on its way, hotplug changes wait for its
// end (its target brings the disks the guest has): a removed volume stays
// attached and reported. A status naming another launcher's attachment
// pod (the guest came by migration) is brought to name this one's.
func TestHotplugAcrossMigration(t *testing.T) {
	n, _, vmi, vol := hotplugNode(t, false)
	ctx := context.Background()
	_, hpName := runAttachPod(t, n, vmi, vol, true)
	n.reconcile("vm1")
	ready := n.vmi("vm1").Status.VolumeStatus
	assert.Equal(t, ready[1].Phase, virtv1.VolumeReady)

	vmi = n.vmi("vm1")
	vmi.Status.MigrationState = &virtv1.VirtualMachineInstanceMigrationState{MigrationUID: "m1", SourceNode: node, TargetNode: "other"}
	assert.NilError(t, n.c.Status().Update(ctx, vmi))
	unplug(t, n)
	assert.Assert(t, attached(t, n), "detached while migrating")
	if d := cmp.Diff(ready, n.vmi("vm1").Status.VolumeStatus); d != "" {
		t.Errorf("volume status while migrating (-want +got):\n%s", d)
	}

	// The migration is over; the status names the pod of the launcher the
	// guest came from.
	vmi = n.vmi("vm1")
	vmi.Spec.Volumes = append(vmi.Spec.Volumes, vol)
	vmi.Spec.Domain.Devices.Disks = append(vmi.Spec.Domain.Devices.Disks, virtv1.Disk{Name: "data",
		DiskDevice: virtv1.DiskDevice{Disk: &virtv1.DiskTarget{Bus: virtv1.DiskBusSCSI}}})
	assert.NilError(t, n.c.Update(ctx, vmi))
	vmi = n.vmi("vm1")
	vmi.Status.MigrationState.Completed = true
	vmi.Status.VolumeStatus[1].HotplugVolume = &virtv1.HotplugVolumeStatus{AttachPodName: "hp-source", AttachPodUID: "hp-source-uid"}
	assert.NilError(t, n.c.Status().Update(ctx, vmi))
	n.reconcile("vm1")
	got := n.vmi("vm1").Status.VolumeStatus[1]
	if d := cmp.Diff(&virtv1.HotplugVolumeStatus{AttachPodName: hpName, AttachPodUID: types.UID("hp-uid-" + hpName)}, got.HotplugVolume); d != "" || got.Phase != virtv1.VolumeReady {
		t.Errorf("after the migration: %s %+v (-want +got):\n%s", got.Phase, got, d)
	}
}

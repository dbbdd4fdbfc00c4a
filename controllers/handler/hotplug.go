package handler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	vmictl "github.com/virtkit/virtkit/controllers/vmi"
	"github.com/virtkit/virtkit/virt/domain"
	"github.com/virtkit/virtkit/virt/launcher/contract"
	"github.com/virtkit/virtkit/virt/migrate"
	"github.com/virtkit/virtkit/virt/storage"
	"github.com/virtkit/virtkit/virt/storage/dvspec"
	"github.com/virtkit/virtkit/virt/storage/hotplug"
)

// Hotplug timing: how long a detach waits for the guest within one
// reconcile, and how soon a volume that is not ready is looked at again.
const (
	detachWait  = 5 * time.Second
	hotplugPoll = 2 * time.Second
)

// Reasons of hotplug volume statuses the handler sets besides
// virt/storage/hotplug's.
const (
	// ReasonVolumeNotMounted: the volume's image is still not in the pod
	// after its bind.
	ReasonVolumeNotMounted = "VolumeNotMounted"
)

// hotplug brings the running domain's hotplugged disks in line with the
// VMI's spec, as virt-api's addvolume and removevolume leave it: a
// hotpluggable volume with a disk has its image bound into the launcher
// pod from its attachment pod (bringImage) and is attached
// (virt/storage/hotplug, Manager.AttachDevice); a hotplugged disk whose
// volume left the spec is detached and its image unbound, after which the
// VMI controller deletes the attachment pod. It returns the hotplug
// volumes' statuses (KubeVirt's phases: Pending or Bound, AttachedToNode,
// MountedToPod, Ready; Detaching) and when to look again.
func (r *Reconciler) hotplug(ctx context.Context, vmi *virtv1.VirtualMachineInstance, g *guest) ([]virtv1.VolumeStatus, ctrl.Result, error) {
	if vmictl.MigrationUnderway(vmi) {
		// A migration is on its way: its target brings the disks the
		// guest has; changes wait for its end, and the domain need not be
		// read.
		return carriedHotplug(vmi), ctrl.Result{}, nil
	}
	want := wantedHotplug(vmi)
	doc, err := g.dom.XML(ctx, g.domain, domain.XMLOptions{})
	if err != nil {
		return nil, ctrl.Result{}, err
	}
	attached := RunningDomainOf(doc).Targets
	hot := map[string]string{} // hotplugged volume -> target
	for vol, target := range attached {
		if p, cold := g.machine.StoragePlan[vol]; !cold || p.Hotpluggable {
			hot[vol] = target
		}
	}
	if len(want) == 0 && len(hot) == 0 {
		return nil, ctrl.Result{}, nil
	}
	log := logf.FromContext(ctx)
	h := hotplug.New(g.dom, hotplug.WithInspector(g.inspect), hotplug.WithDetachTimeout(detachWait))
	var out []virtv1.VolumeStatus
	var res ctrl.Result
	again := func() { res = ctrl.Result{RequeueAfter: hotplugPoll} }
	prev := map[string]*virtv1.HotplugVolumeStatus{}
	for _, s := range vmi.Status.VolumeStatus {
		if s.HotplugVolume != nil {
			prev[s.Name] = s.HotplugVolume
		}
	}
	for _, w := range want {
		if target, ok := hot[w.volume.Name]; ok {
			pod, err := r.heldBy(ctx, vmi, g, w.volume.Name, prev[w.volume.Name])
			if err != nil {
				return nil, ctrl.Result{}, err
			}
			out = append(out, readyVolume(w.volume.Name, target, pod))
			continue
		}
		plan, err := r.hotplugPlan(ctx, vmi, g, w)
		early := false
		if errors.Is(err, storage.ErrNotFound) {
			// A read-only claim's image, or a Block claim's device, is
			// planned once it is in the pod, since nothing may make one
			// there: bring it first.
			block, berr := r.blockClaim(ctx, vmi.Namespace, migrate.ClaimOf(&w.volume))
			if berr != nil {
				return nil, ctrl.Result{}, berr
			}
			if early = readOnlyClaim(w.volume) || block; early {
				plan, err = storage.DiskPlan{ReadOnly: readOnlyClaim(w.volume)}, nil
				if block {
					plan.Source = storage.SourceBlock
				}
			}
		}
		if err != nil {
			out = append(out, virtv1.VolumeStatus{Name: w.volume.Name, Phase: virtv1.VolumePending,
				Reason: hotplug.ReasonAttachFailed, Message: err.Error(), HotplugVolume: &virtv1.HotplugVolumeStatus{}})
			again()
			continue
		}
		d := hotplug.Disk{Plan: plan}
		if w.disk.Disk != nil {
			d.Bus, d.ReadOnly = w.disk.Disk.Bus, w.disk.Disk.ReadOnly
		}
		d.Serial = w.disk.Serial
		st, err := virtv1.VolumeStatus{}, error(hotplug.ErrNotMounted)
		if !early {
			st, err = h.Attach(ctx, g.domain, d)
		}
		pod := prev[w.volume.Name]
		if errors.Is(err, hotplug.ErrNotMounted) {
			// Not in the pod yet: bring it from its attachment pod.
			var waiting *virtv1.VolumeStatus
			waiting, pod, err = r.bringImage(ctx, vmi, g, w, plan)
			if err != nil {
				return nil, ctrl.Result{}, err
			}
			if waiting != nil {
				out = append(out, *waiting)
				again()
				continue
			}
			// Planned again on what is now in the pod.
			if d.Plan, err = r.hotplugPlan(ctx, vmi, g, w); err == nil {
				st, err = h.Attach(ctx, g.domain, d)
			}
		}
		switch {
		case err == nil:
			log.Info("volume hotplugged", "volume", w.volume.Name, "target", st.Target)
			out = append(out, readyVolume(w.volume.Name, st.Target, pod))
		case errors.Is(err, hotplug.ErrNotMounted):
			out = append(out, virtv1.VolumeStatus{Name: w.volume.Name, Phase: virtv1.VolumePending, Reason: ReasonVolumeNotMounted,
				Message: "waiting for the volume's image in the pod: " + err.Error(), HotplugVolume: orEmpty(pod)})
			again()
		default:
			st.Reason, st.Message, st.HotplugVolume = hotplug.ReasonAttachFailed, err.Error(), orEmpty(pod)
			if st.Phase == "" {
				st.Phase = virtv1.VolumePending
			}
			out = append(out, st)
			again()
		}
	}
	for vol, target := range hot {
		if _, ok := want[vol]; ok {
			continue
		}
		var err error
		if cdrom(vmi, vol) {
			// The drive stays, empty: only its volume left.
			err = h.Eject(ctx, g.domain, vol)
		} else {
			err = h.Detach(ctx, g.domain, storage.DiskPlan{Volume: vol})
		}
		switch {
		case err == nil, errors.Is(err, hotplug.ErrNotAttached):
			log.Info("volume unplugged", "volume", vol)
		case errors.Is(err, hotplug.ErrDetachPending):
			out = append(out, virtv1.VolumeStatus{Name: vol, Target: target, Phase: virtv1.HotplugVolumeDetaching,
				Reason: hotplug.ReasonDetachPending, Message: "waiting for the guest to release the disk", HotplugVolume: orEmpty(prev[vol])})
			again()
			continue
		default:
			return out, ctrl.Result{}, err
		}
		if err := r.binder.Unbind(ctx, g.podUID, vol); err != nil {
			return out, ctrl.Result{}, err
		}
	}
	// Images bound for volumes that left the spec before their disk was
	// attached.
	for vol := range prev {
		if _, ok := want[vol]; !ok {
			if _, attached := hot[vol]; !attached {
				if err := r.binder.Unbind(ctx, g.podUID, vol); err != nil {
					return out, ctrl.Result{}, err
				}
			}
		}
	}
	if err := r.hotClaimInfo(ctx, vmi, g, want, out); err != nil {
		return nil, ctrl.Result{}, err
	}
	return sortByVolume(vmi, out), res, nil
}

// carriedHotplug are vmi's hotplug volume statuses as they are.
func carriedHotplug(vmi *virtv1.VirtualMachineInstance) []virtv1.VolumeStatus {
	var out []virtv1.VolumeStatus
	for _, s := range vmi.Status.VolumeStatus {
		if s.HotplugVolume != nil {
			out = append(out, *s.DeepCopy())
		}
	}
	return out
}

// heldBy is the attachment pod that holds volume's image for g's launcher
// pod, as its status is to name it: prev, the last status's, unless that
// names another launcher's pod (the guest came by migration), in which
// case the pod next to g's launcher.
func (r *Reconciler) heldBy(ctx context.Context, vmi *virtv1.VirtualMachineInstance, g *guest, volume string, prev *virtv1.HotplugVolumeStatus) (*virtv1.HotplugVolumeStatus, error) {
	if prev != nil && (prev.AttachPodName == "" || prev.AttachPodName == vmictl.AttachPodName(g.podUID, volume)) {
		return prev, nil
	}
	pod, err := r.attachPod(ctx, vmi, g, volume)
	if err != nil || pod == nil {
		return prev, err
	}
	return &virtv1.HotplugVolumeStatus{AttachPodName: pod.Name, AttachPodUID: pod.UID}, nil
}

// hotClaimInfo fills in each hotplug status what the claim holds, as
// KubeVirt reports it (access modes, capacity, volume mode), which the
// LiveMigratable condition reads: the previous status's, or the claim as
// the guest was taken on, or, for a volume new to the status, the claim as
// it is now (one read; a claim not there yet has none).
func (r *Reconciler) hotClaimInfo(ctx context.Context, vmi *virtv1.VirtualMachineInstance, g *guest, want map[string]wanted, out []virtv1.VolumeStatus) error {
	prev := map[string]*virtv1.PersistentVolumeClaimInfo{}
	for _, s := range vmi.Status.VolumeStatus {
		prev[s.Name] = s.PersistentVolumeClaimInfo
	}
	for i := range out {
		st := &out[i]
		if st.PersistentVolumeClaimInfo != nil {
			continue
		}
		info := prev[st.Name]
		if info == nil {
			info = g.claims[st.Name]
		}
		if w, ok := want[st.Name]; ok && info == nil {
			ro := w.volume.PersistentVolumeClaim != nil && w.volume.PersistentVolumeClaim.ReadOnly
			_, read, err := r.claimFacts(ctx, vmi.Namespace, migrate.ClaimOf(&w.volume), ro)
			if err != nil {
				return err
			}
			info = read
		}
		st.PersistentVolumeClaimInfo = info.DeepCopy()
	}
	return nil
}

func orEmpty(s *virtv1.HotplugVolumeStatus) *virtv1.HotplugVolumeStatus {
	if s == nil {
		return &virtv1.HotplugVolumeStatus{}
	}
	return s
}

type wanted struct {
	volume virtv1.Volume
	disk   virtv1.Disk
}

// wantedHotplug is every hotpluggable volume the spec gives a disk
// (vmictl.HotplugDisks, the rule the attachment pods follow), with its disk.
func wantedHotplug(vmi *virtv1.VirtualMachineInstance) map[string]wanted {
	out := map[string]wanted{}
	for _, name := range vmictl.HotplugDisks(vmi) {
		w := wanted{}
		for _, v := range vmi.Spec.Volumes {
			if v.Name == name {
				w.volume = v
			}
		}
		for _, d := range vmi.Spec.Domain.Devices.Disks {
			if d.Name == name {
				w.disk = d
			}
		}
		out[name] = w
	}
	return out
}

// readOnlyClaim reports whether v is a claim the guest may only read.
func readOnlyClaim(v virtv1.Volume) bool {
	return v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ReadOnly
}

// hotplugPlan plans one hotpluggable volume: the start's plan when the
// volume was there at start, else the planner on the VMI cut down to it.
func (r *Reconciler) hotplugPlan(ctx context.Context, vmi *virtv1.VirtualMachineInstance, g *guest, w wanted) (storage.DiskPlan, error) {
	if p, ok := g.machine.StoragePlan[w.volume.Name]; ok {
		return p, nil
	}
	one := vmi.DeepCopy()
	one.Spec.Volumes = []virtv1.Volume{w.volume}
	one.Spec.Domain.Devices.Disks = []virtv1.Disk{w.disk}
	facts, _, err := r.podFacts(ctx, one, g.files)
	if err != nil {
		return storage.DiskPlan{}, err
	}
	plan, err := g.storage.Plan(ctx, one, facts)
	if err != nil {
		return storage.DiskPlan{}, err
	}
	return plan[w.volume.Name], nil
}

func readyVolume(name, target string, pod *virtv1.HotplugVolumeStatus) virtv1.VolumeStatus {
	return virtv1.VolumeStatus{Name: name, Target: target, Phase: virtv1.VolumeReady, Reason: hotplug.ReasonReady,
		Message: "Successfully attach hotplugged volume " + name + " to VM", HotplugVolume: orEmpty(pod)}
}

// sortByVolume orders statuses as the spec orders volumes; those of
// volumes that left the spec follow, by name.
func sortByVolume(vmi *virtv1.VirtualMachineInstance, in []virtv1.VolumeStatus) []virtv1.VolumeStatus {
	order := map[string]int{}
	for i, v := range vmi.Spec.Volumes {
		order[v.Name] = i
	}
	rank := func(s virtv1.VolumeStatus) int {
		if i, ok := order[s.Name]; ok {
			return i
		}
		return len(order)
	}
	out := slices.Clone(in)
	slices.SortStableFunc(out, func(a, b virtv1.VolumeStatus) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), strings.Compare(a.Name, b.Name))
	})
	return out
}

// Reasons of hotplug volume statuses before the image is in the pod, as
// KubeVirt's VMI controller sets them.
const (
	ReasonPVCNotFound       = "FailedPvcNotFound"
	ReasonPVCNotReady       = "PVCNotReady"
	ReasonAttachPodRunning  = "SuccessfulCreate"
	ReasonAttachPodNotReady = "AttachPodNotReady"
)

// bringImage binds w's image into g's launcher pod from w's attachment pod
// (made by the VMI controller, run by the node, which mounted the claim
// for it). Until the attachment pod runs, or when the bind fails, it
// returns the status to report meanwhile; after a bind, none. It returns
// what is known of the attachment pod either way.
func (r *Reconciler) bringImage(ctx context.Context, vmi *virtv1.VirtualMachineInstance, g *guest, w wanted, plan storage.DiskPlan) (*virtv1.VolumeStatus, *virtv1.HotplugVolumeStatus, error) {
	name := w.volume.Name
	claim := migrate.ClaimOf(&w.volume)
	pod, err := r.attachPod(ctx, vmi, g, name)
	if err != nil {
		return nil, nil, err
	}
	hv := &virtv1.HotplugVolumeStatus{}
	if pod == nil || pod.Status.Phase != corev1.PodRunning {
		st, err := r.claimPhase(ctx, vmi.Namespace, claim)
		if err != nil {
			return nil, nil, err
		}
		if pod != nil {
			hv.AttachPodName = pod.Name
			if st.Phase == virtv1.VolumeBound {
				st.Reason, st.Message = ReasonAttachPodNotReady, "attachment pod "+pod.Name+" is "+string(pod.Status.Phase)
			}
		}
		st.Name, st.HotplugVolume = name, hv
		return &st, hv, nil
	}
	hv.AttachPodName, hv.AttachPodUID = pod.Name, pod.UID
	attached := virtv1.VolumeStatus{Name: name, Phase: virtv1.HotplugVolumeAttachedToNode, Reason: ReasonAttachPodRunning,
		Message: "Created hotplug attachment pod " + pod.Name + ", for volume " + name, HotplugVolume: hv}
	fail := func(err error) (*virtv1.VolumeStatus, *virtv1.HotplugVolumeStatus, error) {
		attached.Reason, attached.Message = hotplug.ReasonAttachFailed, err.Error()
		return &attached, hv, nil
	}
	b := Binding{Launcher: g.podUID, Volume: name, ReadOnly: plan.ReadOnly}
	if plan.Source == storage.SourceBlock {
		// The runtime made the claim's device node in the attachment
		// pod's emptyDir: its numbers are the device's.
		dev, err := blockDevice(contract.AttachPodDevice(r.cfg.PodsDir, pod.UID, name))
		if err != nil {
			return fail(fmt.Errorf("hotplug %s: claim %s: %w", name, claim, err))
		}
		b.Device = dev
	} else {
		src, err := r.claimFolder(ctx, vmi.Namespace, claim, pod)
		if err != nil {
			return fail(err)
		}
		b.Source = src
		if plan.Create {
			b.CreateBytes = plan.CapacityBytes
		}
	}
	if err := r.binder.Bind(ctx, b); err != nil {
		return fail(err)
	}
	logf.FromContext(ctx).Info("hotplugged image bound into the launcher pod", "volume", name, "from", b.Source, "device", b.Device)
	return nil, hv, nil
}

// blockClaim reports whether the claim name is in Block mode (false when
// it is missing: the attachment pod waits for it).
func (r *Reconciler) blockClaim(ctx context.Context, ns, name string) (bool, error) {
	var pvc corev1.PersistentVolumeClaim
	err := r.reader.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &pvc)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("claim %s: %w", name, err)
	}
	return dvspec.IsBlock(&pvc), nil
}

// attachPod is the running attachment pod of g's volume on this node,
// nil when there is none (yet). Only a pod controlled by g's launcher pod
// and made for this VMI counts: anyone who may create pods in the
// namespace can label one, not make the VMI controller's pod the owner.
func (r *Reconciler) attachPod(ctx context.Context, vmi *virtv1.VirtualMachineInstance, g *guest, volume string) (*corev1.Pod, error) {
	var pods corev1.PodList
	if err := r.reader.List(ctx, &pods, client.InNamespace(vmi.Namespace), client.MatchingLabels{virtv1.AppLabel: contract.HotplugLabelValue}); err != nil {
		return nil, fmt.Errorf("handler: VMI %s/%s: listing attachment pods: %w", vmi.Namespace, vmi.Name, err)
	}
	var found *corev1.Pod
	for i := range pods.Items {
		p := &pods.Items[i]
		ref := metav1.GetControllerOf(p)
		if ref == nil || ref.UID != g.podUID || p.Spec.NodeName != r.cfg.NodeName || p.DeletionTimestamp != nil ||
			vmictl.AttachedVolume(p) != volume || p.Annotations[contract.OwnerVMIUIDAnnotation] != string(vmi.UID) {
			continue
		}
		if found == nil || p.Status.Phase == corev1.PodRunning {
			found = p
		}
	}
	return found, nil
}

// claimPhase is a hotplug volume's phase while it has no running
// attachment pod, from its claim, as KubeVirt's.
func (r *Reconciler) claimPhase(ctx context.Context, ns, claim string) (virtv1.VolumeStatus, error) {
	var pvc corev1.PersistentVolumeClaim
	err := r.reader.Get(ctx, types.NamespacedName{Namespace: ns, Name: claim}, &pvc)
	switch {
	case apierrors.IsNotFound(err):
		return virtv1.VolumeStatus{Phase: virtv1.VolumePending, Reason: ReasonPVCNotFound, Message: "PVC " + claim + " not found"}, nil
	case err != nil:
		return virtv1.VolumeStatus{}, fmt.Errorf("handler: claim %s/%s: %w", ns, claim, err)
	case pvc.Status.Phase == corev1.ClaimBound:
		return virtv1.VolumeStatus{Phase: virtv1.VolumeBound, Reason: ReasonPVCNotReady, Message: "PVC is in phase Bound"}, nil
	case pvc.Status.Phase == corev1.ClaimPending:
		return virtv1.VolumeStatus{Phase: virtv1.VolumePending, Reason: ReasonPVCNotReady, Message: "PVC is in phase ClaimPending"}, nil
	}
	return virtv1.VolumeStatus{Phase: virtv1.VolumePending, Reason: ReasonPVCNotReady, Message: "PVC is in phase Lost"}, nil
}

// claimFolder is the node folder where the claim is mounted for the
// attachment pod pod: a CSI volume's publication for the pod (the
// kubelet's layout), a hostPath or local volume's path.
func (r *Reconciler) claimFolder(ctx context.Context, ns, claim string, pod *corev1.Pod) (string, error) {
	var pvc corev1.PersistentVolumeClaim
	if err := r.reader.Get(ctx, types.NamespacedName{Namespace: ns, Name: claim}, &pvc); err != nil {
		return "", fmt.Errorf("claim %s: %w", claim, err)
	}
	if pvc.Spec.VolumeName == "" {
		return "", fmt.Errorf("claim %s is not bound", claim)
	}
	var pv corev1.PersistentVolume
	if err := r.reader.Get(ctx, types.NamespacedName{Name: pvc.Spec.VolumeName}, &pv); err != nil {
		return "", fmt.Errorf("claim %s: persistentVolume %s: %w", claim, pvc.Spec.VolumeName, err)
	}
	switch {
	case pv.Spec.CSI != nil:
		return contract.CSIVolumeDir(r.cfg.PodsDir, pod.UID, pv.Name), nil
	case pv.Spec.HostPath != nil:
		return pv.Spec.HostPath.Path, nil
	case pv.Spec.Local != nil:
		return pv.Spec.Local.Path, nil
	}
	return "", fmt.Errorf("claim %s: persistentVolume %s: only CSI, hostPath and local volumes are hotplugged", claim, pv.Name)
}

// cdrom reports whether vmi has a CD-ROM disk named name: its drive
// outlives a hotplugged volume's media (KubeVirt's declarative CD-ROM
// hotplug ejects, it does not unplug).
func cdrom(vmi *virtv1.VirtualMachineInstance, name string) bool {
	for _, d := range vmi.Spec.Domain.Devices.Disks {
		if d.Name == name {
			return d.CDRom != nil
		}
	}
	return false
}

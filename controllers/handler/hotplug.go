package handler

import (
	"context"
	"errors"
	"time"

	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/virtkit/virtkit/virt/domain"
	"github.com/virtkit/virtkit/virt/spec"
	"github.com/virtkit/virtkit/virt/storage"
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
	// ReasonVolumeNotMounted: the volume's image is not in the pod yet
	// (KubeVirt's attachment pod and mount, which virtkit does not make).
	ReasonVolumeNotMounted = "VolumeNotMounted"
)

// hotplug brings the running domain's hotplugged disks in line with the
// VMI's spec, as virt-api's addvolume and removevolume leave it: a
// hotpluggable volume with a disk is attached (virt/storage/hotplug,
// Manager.AttachDevice), a hotplugged disk whose volume left the spec is
// detached. It returns the hotplug volumes' statuses and when to look again.
func (r *Reconciler) hotplug(ctx context.Context, vmi *virtv1.VirtualMachineInstance, g *guest) ([]virtv1.VolumeStatus, ctrl.Result, error) {
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
	for _, w := range want {
		if target, ok := hot[w.volume.Name]; ok {
			out = append(out, readyVolume(w.volume.Name, target))
			continue
		}
		plan, err := r.hotplugPlan(ctx, vmi, g, w)
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
		st, err := h.Attach(ctx, g.domain, d)
		switch {
		case err == nil:
			log.Info("volume hotplugged", "volume", w.volume.Name, "target", st.Target)
			out = append(out, readyVolume(w.volume.Name, st.Target))
		case errors.Is(err, hotplug.ErrNotMounted):
			out = append(out, virtv1.VolumeStatus{Name: w.volume.Name, Phase: virtv1.VolumePending, Reason: ReasonVolumeNotMounted,
				Message: "waiting for the volume's image in the pod: " + err.Error(), HotplugVolume: &virtv1.HotplugVolumeStatus{}})
			again()
		default:
			st.Reason, st.Message, st.HotplugVolume = hotplug.ReasonAttachFailed, err.Error(), &virtv1.HotplugVolumeStatus{}
			out = append(out, st)
			again()
		}
	}
	for vol := range hot {
		if _, ok := want[vol]; ok {
			continue
		}
		err := h.Detach(ctx, g.domain, storage.DiskPlan{Volume: vol})
		switch {
		case err == nil, errors.Is(err, hotplug.ErrNotAttached):
			log.Info("volume unplugged", "volume", vol)
		case errors.Is(err, hotplug.ErrDetachPending):
			again()
		default:
			return out, ctrl.Result{}, err
		}
	}
	return sortByVolume(vmi, out), res, nil
}

type wanted struct {
	volume virtv1.Volume
	disk   virtv1.Disk
}

// wantedHotplug is every hotpluggable volume the spec gives a disk.
func wantedHotplug(vmi *virtv1.VirtualMachineInstance) map[string]wanted {
	disks := map[string]virtv1.Disk{}
	for _, d := range vmi.Spec.Domain.Devices.Disks {
		disks[d.Name] = d
	}
	out := map[string]wanted{}
	for _, v := range vmi.Spec.Volumes {
		if d, ok := disks[v.Name]; ok && spec.Hotpluggable(&v) {
			out[v.Name] = wanted{volume: v, disk: d}
		}
	}
	return out
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

func readyVolume(name, target string) virtv1.VolumeStatus {
	return virtv1.VolumeStatus{Name: name, Target: target, Phase: virtv1.VolumeReady, Reason: hotplug.ReasonReady,
		Message: "Successfully attach hotplugged volume " + name + " to VM", HotplugVolume: &virtv1.HotplugVolumeStatus{}}
}

// sortByVolume orders statuses as the spec orders volumes.
func sortByVolume(vmi *virtv1.VirtualMachineInstance, in []virtv1.VolumeStatus) []virtv1.VolumeStatus {
	by := map[string]virtv1.VolumeStatus{}
	for _, s := range in {
		by[s.Name] = s
	}
	var out []virtv1.VolumeStatus
	for _, v := range vmi.Spec.Volumes {
		if s, ok := by[v.Name]; ok {
			out = append(out, s)
		}
	}
	return out
}

package vm

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/controllers/conditions"
	"github.com/virtkit/virtkit/virt/migrate"
	"github.com/virtkit/virtkit/virt/spec"
)

// AnnTemplateHash records on a VMI the hash of its VM's template as the VM
// controller started it, in the part a running VMI cannot take live
// (TemplateHash): a template whose hash differs needs a restart.
const AnnTemplateHash = "virtkit.io/template-hash"

// AnnNetworkHash records on a VMI the hash of its VM's template's
// interfaces and networks as the VM controller started it (NetworkHash).
const AnnNetworkHash = "virtkit.io/network-hash"

// MessageRestartRequired is KubeVirt's RestartRequired message for a
// template change that cannot be applied live.
const MessageRestartRequired = "a non-live-updatable field was changed in the template spec"

// TemplateHash hashes what of vm's template a running VMI cannot take
// live: the template's spec less what this controller applies to a
// running VMI (hotpluggable volumes and their disks, declared hotplug;
// claims, under updateVolumesStrategy Migration, which a volume migration
// changes; CPU sockets, guest memory, node selector, affinity and
// tolerations, which PlanLiveUpdate judges; interfaces and networks, which
// NetworkHash covers) and the firmware UUID (which may be written into the
// template after the start). Only the template's spec counts, as in
// KubeVirt.
func TemplateHash(vm *virtv1.VirtualMachine) string { return templateHash(vm, false) }

// templateHash is TemplateHash, with the interfaces and networks counted
// when withNetworks: the hash controllers before interface hotplug
// recorded, which a VMI they started still carries (it has no
// AnnNetworkHash).
func templateHash(vm *virtv1.VirtualMachine, withNetworks bool) string {
	if vm.Spec.Template == nil {
		return ""
	}
	s := vm.Spec.Template.Spec.DeepCopy()
	var hot []string
	s.Volumes = slices.DeleteFunc(s.Volumes, func(v virtv1.Volume) bool {
		if spec.Hotpluggable(&v) {
			hot = append(hot, v.Name)
			return true
		}
		return false
	})
	// A CD-ROM's drive stays when its media comes or goes: only other
	// disks go with their hotpluggable volumes.
	s.Domain.Devices.Disks = slices.DeleteFunc(s.Domain.Devices.Disks, func(d virtv1.Disk) bool { return d.CDRom == nil && slices.Contains(hot, d.Name) })
	if st := vm.Spec.UpdateVolumesStrategy; st != nil && *st == virtv1.UpdateVolumesStrategyMigration {
		for i := range s.Volumes {
			switch v := &s.Volumes[i]; {
			case v.PersistentVolumeClaim != nil:
				v.PersistentVolumeClaim.ClaimName = ""
			case v.DataVolume != nil:
				v.DataVolume.Name = ""
			}
		}
	}
	// What PlanLiveUpdate carries over, or judges, itself.
	s.NodeSelector, s.Affinity, s.Tolerations = nil, nil, nil
	// Interface hotplug's, judged by NetworkHash.
	if !withNetworks {
		s.Domain.Devices.Interfaces, s.Networks = nil, nil
	}
	if s.Domain.CPU != nil {
		s.Domain.CPU.Sockets = 0
	}
	if s.Domain.Memory != nil {
		s.Domain.Memory.Guest = nil
	}
	if fw := s.Domain.Firmware; fw != nil {
		if fw.UUID = ""; equality.Semantic.DeepEqual(*fw, virtv1.Firmware{}) {
			s.Domain.Firmware = nil
		}
	}
	b, _ := json.Marshal(s) // a spec always marshals
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// NetworkHash hashes the interfaces (their state aside) and networks of
// vm's template. A template whose interfaces changed since the VMI's start
// needs a restart only when hotplug cannot bring the VMI there
// (spec.InterfacesNeedRestart): an interface added is hotplugged, one set
// absent unplugged, as in KubeVirt.
func NetworkHash(vm *virtv1.VirtualMachine) string {
	if vm.Spec.Template == nil {
		return ""
	}
	s := vm.Spec.Template.Spec
	ifaces := make([]virtv1.Interface, len(s.Domain.Devices.Interfaces))
	for i := range s.Domain.Devices.Interfaces {
		ifaces[i] = *s.Domain.Devices.Interfaces[i].DeepCopy()
		ifaces[i].State = ""
	}
	b, _ := json.Marshal(struct {
		Interfaces []virtv1.Interface
		Networks   []virtv1.Network
	}{ifaces, s.Networks}) // a spec always marshals
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// syncRestartRequired sets the RestartRequired condition in st, as
// KubeVirt's VM controller does: True, with KubeVirt's message, while vmi
// runs from a template that changed since its start in a way it cannot
// take live; gone once the VMI ends or the template is back to what it
// started from (unless a claim change waits, which syncVolumeUpdate
// words). A VMI started without the hash (by an older controller) is not
// judged.
func syncRestartRequired(st *virtv1.VirtualMachineStatus, vm *virtv1.VirtualMachine, vmi *virtv1.VirtualMachineInstance, ts metav1.Time) {
	if vmi == nil || vmi.IsFinal() || vmi.DeletionTimestamp != nil {
		conditions.VM().Remove(&st.Conditions, virtv1.VirtualMachineRestartRequired)
		return
	}
	started, ok := vmi.Annotations[AnnTemplateHash]
	if !ok || vm.Spec.Template == nil {
		return
	}
	netStarted, netOK := vmi.Annotations[AnnNetworkHash]
	netChanged := netOK && netStarted != NetworkHash(vm) && spec.InterfacesNeedRestart(&vm.Spec.Template.Spec, &vmi.Spec)
	now := TemplateHash(vm)
	if !netOK {
		now = templateHash(vm, true) // started by a controller before interface hotplug
	}
	if started != now || netChanged {
		if c := conditions.VM().Find(st.Conditions, virtv1.VirtualMachineRestartRequired); c == nil || c.Status != k8sv1.ConditionTrue {
			conditions.VM().Set(&st.Conditions, virtv1.VirtualMachineCondition{Type: virtv1.VirtualMachineRestartRequired,
				Status: k8sv1.ConditionTrue, Message: MessageRestartRequired}, ts)
		}
		return
	}
	if len(migrate.ChangedClaims(vm.Spec.Template.Spec.Volumes, vmi.Spec.Volumes)) == 0 {
		conditions.VM().Remove(&st.Conditions, virtv1.VirtualMachineRestartRequired)
	}
}

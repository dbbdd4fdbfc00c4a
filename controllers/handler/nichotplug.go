package handler

import (
	"context"
	"errors"

	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	vmictl "github.com/virtkit/virtkit/controllers/vmi"
	"github.com/virtkit/virtkit/virt"
	"github.com/virtkit/virtkit/virt/network"
	"github.com/virtkit/virtkit/virt/spec"
)

// hotplugNICs brings the running guest's NICs in line with the VMI's spec,
// as KubeVirt's handler does for interface hotplug: a bridge interface the
// spec gained is plugged (virt.Machine.PlugInterface) once the cluster's
// Multus has given the launcher pod its interface (until then it waits);
// one whose state is absent, or that left the spec, is unplugged
// (UnplugInterface), waiting for the guest to release it. The plans are
// saved for a restarted handler after each change. While a migration is
// on its way nothing changes: its target plans every interface the spec
// has.
func (r *Reconciler) hotplugNICs(ctx context.Context, vmi *virtv1.VirtualMachineInstance, g *guest) (ctrl.Result, error) {
	if vmictl.MigrationUnderway(vmi) {
		return ctrl.Result{}, nil
	}
	log := logf.FromContext(ctx)
	inSpec := map[string]bool{}
	var plug, unplug []string
	for _, iface := range vmi.Spec.Domain.Devices.Interfaces {
		inSpec[iface.Name] = true
		_, planned := g.machine.NetworkPlan[iface.Name]
		switch {
		case iface.State == virtv1.InterfaceStateAbsent && planned:
			unplug = append(unplug, iface.Name)
		case iface.State != virtv1.InterfaceStateAbsent && !planned && iface.Bridge != nil:
			plug = append(plug, iface.Name)
		}
	}
	for name := range g.machine.NetworkPlan {
		if !inSpec[name] {
			unplug = append(unplug, name)
		}
	}
	if len(plug) == 0 && len(unplug) == 0 {
		return ctrl.Result{}, nil
	}
	var res ctrl.Result
	changed := false
	var errs []error
	for _, name := range unplug {
		err := g.machine.UnplugInterface(ctx, name)
		switch {
		case errors.Is(err, virt.ErrUnplugPending):
			res.RequeueAfter = hotplugPoll
		case err != nil:
			errs = append(errs, err)
		default:
			changed = true
		}
	}
	var defaulted *virtv1.VirtualMachineInstance
	if len(plug) > 0 {
		defaulted = vmi.DeepCopy()
		spec.DefaultVMI(defaulted)
	}
	for _, name := range plug {
		err := g.machine.PlugInterface(ctx, defaulted, name)
		switch {
		case errors.Is(err, network.ErrNoPodInterface):
			// Multus has not attached the pod's interface yet.
			log.V(1).Info("waiting for the pod interface of a hotplugged NIC", "interface", name)
			res.RequeueAfter = hotplugPoll
		case err != nil:
			errs = append(errs, err)
		default:
			changed = true
		}
	}
	if changed {
		errs = append(errs, r.saveState(vmi, g.folder, g.machine))
	}
	return res, errors.Join(errs...)
}

package subresources

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/virtapi/subresources/requests"
)

// getVM reads the VM of a call: 404 in KubeVirt's words when it is missing.
func (s *Server) getVM(ctx context.Context, req *request) (*virtv1.VirtualMachine, error) {
	vm := &virtv1.VirtualMachine{}
	if err := s.client.Get(ctx, client.ObjectKey{Namespace: req.namespace, Name: req.name}, vm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, apierrors.NewNotFound(vmResource(), req.name)
		}
		return nil, apierrors.NewInternalError(fmt.Errorf("unable to retrieve vm [%s]: %w", req.name, err))
	}
	return vm, nil
}

// getVMI reads the VMI of a call; a missing one is nil when optional, else 404.
func (s *Server) getVMI(ctx context.Context, req *request, optional bool) (*virtv1.VirtualMachineInstance, error) {
	vmi := &virtv1.VirtualMachineInstance{}
	if err := s.client.Get(ctx, client.ObjectKey{Namespace: req.namespace, Name: req.name}, vmi); err != nil {
		if apierrors.IsNotFound(err) {
			if optional {
				return nil, nil
			}
			return nil, apierrors.NewNotFound(vmiResource(), req.name)
		}
		return nil, apierrors.NewInternalError(fmt.Errorf("unable to retrieve vmi [%s]: %w", req.name, err))
	}
	return vmi, nil
}

// runStrategyOf is the VM's run strategy; a VM with both running and
// runStrategy is refused as the apiserver's validation would.
func runStrategyOf(vm *virtv1.VirtualMachine) (virtv1.VirtualMachineRunStrategy, error) {
	rs, err := vm.RunStrategy()
	if err != nil {
		return rs, apierrors.NewInternalError(fmt.Errorf("VirtualMachine %s/%s: spec.running and spec.runStrategy: %w", vm.Namespace, vm.Name, err))
	}
	return rs, nil
}

// patchStatus queues state changes on vm's status.
func (s *Server) patchStatus(ctx context.Context, vm *virtv1.VirtualMachine, dry bool, changes ...virtv1.VirtualMachineStateChangeRequest) error {
	patch, err := stateChangePatch(vm, changes...)
	if errors.Is(err, errUnderway) {
		return conflict(vmResource(), vm.Name, "%s; wait for the VM to reach the state asked for before, then retry", msgUnderway)
	}
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if err := s.client.Status().Patch(ctx, vm, client.RawPatch(types.JSONPatchType, patch), statusPatchOpts(dry)...); err != nil {
		return writeFailure(vmResource(), vm.Name, fmt.Sprintf("patching status.stateChangeRequests of VirtualMachine %s/%s", vm.Namespace, vm.Name), err)
	}
	return nil
}

// patchRunStrategy switches the VM's spec to Always or Halted.
func (s *Server) patchRunStrategy(ctx context.Context, vm *virtv1.VirtualMachine, running, dry bool) error {
	patch, err := runStrategyPatch(vm, running)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if err := s.client.Patch(ctx, vm, client.RawPatch(types.JSONPatchType, patch), patchOpts(dry)...); err != nil {
		return writeFailure(vmResource(), vm.Name, fmt.Sprintf("patching spec.runStrategy of VirtualMachine %s/%s", vm.Namespace, vm.Name), err)
	}
	return nil
}

// start is PUT virtualmachines/NAME/start (body v1.StartOptions). Per run
// strategy, as KubeVirt:
//
//	Halted                   spec -> Always (a paused start queues Start{paused}, which controllers/vm turns into Always)
//	Manual, RerunOnFailure   queue Start (Stop+Start when the old VMI ended)
//	Always, Once             409: the controller already keeps it running
func (s *Server) start(ctx context.Context, req *request) error {
	var opts virtv1.StartOptions
	dry, err := requests.DecodeDry(req.w, req.r, &opts, &opts.DryRun, "v1.StartOptions", `{} or {"paused":true}`)
	if err != nil {
		return err
	}
	vm, err := s.getVM(ctx, req)
	if err != nil {
		return err
	}
	vmi, err := s.getVMI(ctx, req, true)
	if err != nil {
		return err
	}
	if vmi != nil && !vmi.IsFinal() && vmi.Status.Phase != virtv1.Unknown && vmi.Status.Phase != virtv1.VmPhaseUnset {
		return conflict(vmResource(), req.name, msgVMAlreadyRunning)
	}
	rs, err := runStrategyOf(vm)
	if err != nil {
		return err
	}
	data := map[string]string(nil)
	if opts.Paused {
		data = map[string]string{virtv1.StartRequestDataPausedKey: virtv1.StartRequestDataPausedTrue}
	}
	switch rs {
	case virtv1.RunStrategyHalted:
		templatePaused := vm.Spec.Template != nil && vm.Spec.Template.Spec.StartStrategy != nil &&
			*vm.Spec.Template.Spec.StartStrategy == virtv1.StartStrategyPaused
		if opts.Paused && !templatePaused {
			err = s.patchStatus(ctx, vm, dry, virtv1.VirtualMachineStateChangeRequest{Action: virtv1.StartRequest, Data: data})
		} else {
			err = s.patchRunStrategy(ctx, vm, true, dry)
		}
	case virtv1.RunStrategyManual, virtv1.RunStrategyRerunOnFailure:
		switch {
		case rs == virtv1.RunStrategyRerunOnFailure && vmi != nil && vmi.Status.Phase == virtv1.Failed:
			return conflict(vmResource(), req.name, "%v does not support starting VM from failed state", rs)
		case vmi != nil && (vmi.IsFinal()):
			// The old VMI ended: stop it (by UID), then start anew.
			err = s.patchStatus(ctx, vm, dry,
				virtv1.VirtualMachineStateChangeRequest{Action: virtv1.StopRequest, UID: &vmi.UID},
				virtv1.VirtualMachineStateChangeRequest{Action: virtv1.StartRequest, Data: data})
		default:
			err = s.patchStatus(ctx, vm, dry, virtv1.VirtualMachineStateChangeRequest{Action: virtv1.StartRequest, Data: data})
		}
	default: // Always, Once
		return conflict(vmResource(), req.name, "%v does not support manual start requests", rs)
	}
	if err != nil {
		return err
	}
	return req.accepted()
}

// stop is PUT virtualmachines/NAME/stop (body v1.StopOptions). A grace
// period is first written to the running VMI's spec. Per run strategy:
//
//	Always, Once             spec -> Halted
//	Manual, RerunOnFailure   queue Stop of the running VMI
//	Halted                   only a force stop with a shorter grace period, queued as Stop
func (s *Server) stop(ctx context.Context, req *request) error {
	var opts virtv1.StopOptions
	dry, err := requests.DecodeDry(req.w, req.r, &opts, &opts.DryRun, "v1.StopOptions", `{} or {"gracePeriod":0}`)
	if err != nil {
		return err
	}
	if opts.GracePeriod != nil && *opts.GracePeriod < 0 {
		return badRequest("gracePeriod has to be greater or equal to 0")
	}
	vm, err := s.getVM(ctx, req)
	if err != nil {
		return err
	}
	rs, err := runStrategyOf(vm)
	if err != nil {
		return err
	}
	vmi, err := s.getVMI(ctx, req, true)
	if err != nil {
		return err
	}
	running := vmi != nil && !vmi.IsFinal()
	if !running && rs != virtv1.RunStrategyAlways && rs != virtv1.RunStrategyOnce {
		return conflict(vmResource(), req.name, msgVMNotRunning)
	}
	if rs == virtv1.RunStrategyHalted {
		old := vmi.Spec.TerminationGracePeriodSeconds
		if opts.GracePeriod == nil || (old != nil && *opts.GracePeriod >= *old) {
			return conflict(vmResource(), req.name, "%v only supports manual stop requests with a shorter graceperiod", rs)
		}
	}
	if running && opts.GracePeriod != nil {
		if err := s.patchGracePeriod(ctx, vmi, *opts.GracePeriod, dry); err != nil {
			return err
		}
	}
	switch rs {
	case virtv1.RunStrategyAlways, virtv1.RunStrategyOnce:
		err = s.patchRunStrategy(ctx, vm, false, dry)
	default: // Manual, RerunOnFailure, Halted (force stop)
		err = s.patchStatus(ctx, vm, dry, virtv1.VirtualMachineStateChangeRequest{Action: virtv1.StopRequest, UID: &vmi.UID})
	}
	if err != nil {
		return err
	}
	return req.accepted()
}

// patchGracePeriod shortens (or sets) the grace period the VMI is shut down with.
func (s *Server) patchGracePeriod(ctx context.Context, vmi *virtv1.VirtualMachineInstance, seconds int64, dry bool) error {
	patch, err := gracePeriodPatch(vmi, seconds)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if err := s.client.Patch(ctx, vmi, client.RawPatch(types.JSONPatchType, patch), patchOpts(dry)...); err != nil {
		return writeFailure(vmiResource(), vmi.Name, fmt.Sprintf("patching spec.terminationGracePeriodSeconds of VirtualMachineInstance %s/%s", vmi.Namespace, vmi.Name), err)
	}
	return nil
}

// restart is PUT virtualmachines/NAME/restart (body v1.RestartOptions): it
// queues Stop of the running VMI then Start. gracePeriodSeconds 0 also
// deletes the launcher pod at once (grace 1 s), as KubeVirt's force restart.
func (s *Server) restart(ctx context.Context, req *request) error {
	var opts virtv1.RestartOptions
	dry, err := requests.DecodeDry(req.w, req.r, &opts, &opts.DryRun, "v1.RestartOptions", `{} or {"gracePeriodSeconds":0}`)
	if err != nil {
		return err
	}
	if g := opts.GracePeriodSeconds; g != nil && *g > 0 {
		return badRequest("For force restart, only gracePeriod=0 is supported for now")
	} else if g != nil && *g < 0 {
		return badRequest("gracePeriod has to be greater or equal to 0")
	}
	vm, err := s.getVM(ctx, req)
	if err != nil {
		return err
	}
	rs, err := runStrategyOf(vm)
	if err != nil {
		return err
	}
	if rs == virtv1.RunStrategyHalted || rs == virtv1.RunStrategyOnce {
		return conflict(vmResource(), req.name, "RunStrategy %v does not support manual restart requests", rs)
	}
	vmi, err := s.getVMI(ctx, req, true)
	if err != nil {
		return err
	}
	if vmi == nil {
		return conflict(vmResource(), req.name, "%s; start it instead", msgVMNotRunning)
	}
	if err := s.patchStatus(ctx, vm, dry,
		virtv1.VirtualMachineStateChangeRequest{Action: virtv1.StopRequest, UID: &vmi.UID},
		virtv1.VirtualMachineStateChangeRequest{Action: virtv1.StartRequest}); err != nil {
		return err
	}
	if opts.GracePeriodSeconds != nil && !dry {
		if err := s.deleteLauncherPods(ctx, vmi); err != nil {
			return err
		}
	}
	return req.accepted()
}

// deleteLauncherPods deletes the running launcher pods of vmi with a grace
// period of 1 s, the shortest safe one.
func (s *Server) deleteLauncherPods(ctx context.Context, vmi *virtv1.VirtualMachineInstance) error {
	var pods corev1.PodList
	if err := s.client.List(ctx, &pods, client.InNamespace(vmi.Namespace), client.MatchingLabels{
		virtv1.AppLabel: "virt-launcher", virtv1.CreatedByLabel: string(vmi.UID)}); err != nil {
		return apierrors.NewInternalError(fmt.Errorf("listing launcher pods of VirtualMachineInstance %s/%s: %w", vmi.Namespace, vmi.Name, err))
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
			continue
		}
		if err := s.client.Delete(ctx, p, client.GracePeriodSeconds(1)); err != nil && !apierrors.IsNotFound(err) {
			return apierrors.NewInternalError(fmt.Errorf("deleting launcher pod %s/%s of VirtualMachineInstance %s: %w", p.Namespace, p.Name, vmi.Name, err))
		}
	}
	return nil
}

package subresources

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/virtapi/subresources/requests"
)

// DrainTaintFunc returns the drain taint node carries ("" for none), the
// KubeVirt CR's migrations.nodeDrainTaintKey with effect NoSchedule, in its
// key:Effect form (virtapi/eviction.DrainTaint is virt-api's).
type DrainTaintFunc func(ctx context.Context, node string) (string, error)

// WithDrainTaint sets how evacuatecancel finds a node's drain taint, which
// it refuses to cancel. Without it no node is taken to carry one.
func WithDrainTaint(f DrainTaintFunc) Option { return func(s *Server) { s.drainTaint = f } }

// vmEvacuateCancel is PUT virtualmachines/NAME/evacuatecancel (body
// v1.EvacuateCancelOptions): vmiEvacuateCancel on the VM's VMI.
func (s *Server) vmEvacuateCancel(ctx context.Context, req *request) error {
	vm, err := s.getVM(ctx, req)
	if err != nil {
		return err
	}
	if !vm.Status.Created {
		return conflict(vmResource(), req.name, "VMI is not started")
	}
	return s.evacuateCancel(ctx, req)
}

// vmiEvacuateCancel is PUT virtualmachineinstances/NAME/evacuatecancel.
func (s *Server) vmiEvacuateCancel(ctx context.Context, req *request) error {
	return s.evacuateCancel(ctx, req)
}

// evacuateCancel clears the VMI's status.evacuationNodeName, the mark a
// drain's eviction left, as KubeVirt's evacuate-cancel does; the
// evacuation controller then stops the evacuation migration it made. A
// node that carries the drain taint is refused (400): the taint, not the
// mark, drains it, and only removing the taint stops that. A VMI with no
// mark is left as it is. evacuationNodeName in the body, when given, must
// be the VMI's mark (else 409). It answers 200, as KubeVirt's.
func (s *Server) evacuateCancel(ctx context.Context, req *request) error {
	var opts virtv1.EvacuateCancelOptions
	dry, err := requests.DecodeDry(req.w, req.r, &opts, &opts.DryRun, "v1.EvacuateCancelOptions", `{} or {"evacuationNodeName":"node-a"}`)
	if err != nil {
		return err
	}
	vmi, err := s.getVMI(ctx, req, false)
	if err != nil {
		return err
	}
	node := vmi.Status.EvacuationNodeName
	if node == "" {
		node = vmi.Status.NodeName
	}
	if node != "" {
		if err := s.refuseDrainTainted(ctx, node); err != nil {
			return err
		}
	}
	if vmi.Status.EvacuationNodeName == "" {
		return req.ok()
	}
	if opts.EvacuationNodeName != "" && opts.EvacuationNodeName != vmi.Status.EvacuationNodeName {
		return conflict(vmiResource(), req.name, "the VMI is evacuated from %s, not %s", vmi.Status.EvacuationNodeName, opts.EvacuationNodeName)
	}
	upd := vmi.DeepCopy()
	upd.Status.EvacuationNodeName = ""
	if err := s.client.Status().Patch(ctx, upd, client.MergeFromWithOptions(vmi, client.MergeFromWithOptimisticLock{}), statusPatchOpts(dry)...); err != nil {
		return writeFailure(vmiResource(), req.name, fmt.Sprintf("clearing status.evacuationNodeName of VirtualMachineInstance %s/%s", req.namespace, req.name), err)
	}
	return req.ok()
}

// refuseDrainTainted is a 400 when node carries the drain taint, in
// KubeVirt's words.
func (s *Server) refuseDrainTainted(ctx context.Context, node string) error {
	if s.drainTaint == nil {
		return nil
	}
	taint, err := s.drainTaint(ctx, node)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if taint != "" {
		return badRequest("Node %q has NodeDrainTaintKey %q", node, taint)
	}
	return nil
}

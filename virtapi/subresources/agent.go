package subresources

import (
	"context"
	"encoding/json"
	"net/http"

	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virtapi/nodeapi"
	"github.com/virtkit/virtkit/virtapi/subresources/requests"
)

// msgNoAgent is KubeVirt's refusal of the agent verbs, which clients match.
const msgNoAgent = "VMI does not have guest agent connected"

// agentReady is KubeVirt's check of the read-only agent verbs: a running
// VMI whose agent is connected, else 409.
func agentReady(vmi *virtv1.VirtualMachineInstance) error {
	switch {
	case vmi.Status.Phase != virtv1.Running:
		return conflict(vmiResource(), vmi.Name, msgVMIRunning)
	case !hasCondition(vmi, virtv1.VirtualMachineInstanceAgentConnected):
		return conflict(vmiResource(), vmi.Name, msgNoAgent)
	}
	return nil
}

// agentGet serves one of the agent's read-only verbs as JSON.
func agentGet[T any](s *Server, verb string, get func(nodeapi.Ops, context.Context, string, string) (T, error)) func(context.Context, *request) error {
	return func(ctx context.Context, req *request) error {
		vmi, err := s.getVMI(ctx, req, false)
		if err != nil {
			return err
		}
		if err := agentReady(vmi); err != nil {
			return err
		}
		ops, err := s.opsFor(ctx, vmi)
		if err != nil {
			return err
		}
		v, err := get(ops, ctx, vmi.Namespace, vmi.Name)
		if err != nil {
			return nodeFailure(vmi, verb, err)
		}
		req.w.Header().Set("Content-Type", "application/json")
		req.w.WriteHeader(http.StatusOK)
		return json.NewEncoder(req.w).Encode(v)
	}
}

// freeze is PUT virtualmachineinstances/NAME/freeze
// (v1.FreezeUnfreezeTimeout, unfreezeTimeout required): the guest's file
// systems freeze until unfreeze or the timeout.
func (s *Server) freeze(ctx context.Context, req *request) error {
	var opts virtv1.FreezeUnfreezeTimeout
	if err := requests.Decode(req.w, req.r, &opts, "v1.FreezeUnfreezeTimeout", `{"unfreezeTimeout":"5m"}`); err != nil {
		return err
	}
	if opts.UnfreezeTimeout == nil {
		return badRequest("Unfreeze timeout in freeze request is not set")
	}
	if opts.UnfreezeTimeout.Duration < 0 {
		return badRequest("unfreezeTimeout %s: must not be negative", opts.UnfreezeTimeout.Duration)
	}
	return s.nodeVerb(ctx, req, false, "freeze", func(vmi *virtv1.VirtualMachineInstance) error {
		if vmi.Status.Phase != virtv1.Running {
			return conflict(vmiResource(), vmi.Name, msgVMNotRunning)
		}
		return nil
	}, func(ops nodeapi.Ops, ctx context.Context, ns, name string) error {
		return ops.Freeze(ctx, ns, name, opts.UnfreezeTimeout.Duration)
	})
}

// unfreeze is PUT virtualmachineinstances/NAME/unfreeze.
func (s *Server) unfreeze(ctx context.Context, req *request) error {
	return s.nodeVerb(ctx, req, false, "unfreeze", func(vmi *virtv1.VirtualMachineInstance) error {
		if vmi.Status.Phase != virtv1.Running {
			return conflict(vmiResource(), vmi.Name, msgVMIRunning)
		}
		return nil
	}, nodeapi.Ops.Unfreeze)
}

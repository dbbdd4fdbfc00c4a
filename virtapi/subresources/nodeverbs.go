package subresources

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/internal/wsstream"
	"github.com/virtkit/virtkit/virtapi/nodeapi"
	"github.com/virtkit/virtkit/virtapi/subresources/requests"
)

// hasCondition reports whether vmi has condition t with status True.
func hasCondition(vmi *virtv1.VirtualMachineInstance, t virtv1.VirtualMachineInstanceConditionType) bool {
	for _, c := range vmi.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// opsFor returns the Ops of the node vmi runs on.
func (s *Server) opsFor(ctx context.Context, vmi *virtv1.VirtualMachineInstance) (nodeapi.Ops, error) {
	if vmi.Status.NodeName == "" {
		return nil, conflict(vmiResource(), vmi.Name, "%s: it has no node yet", msgVMIRunning)
	}
	if s.nodeOps == nil {
		return nil, unavailable("this virt-api has no way to reach node handlers (no nodeapi.Locator configured)")
	}
	ops, err := s.nodeOps(ctx, vmi.Status.NodeName)
	if err != nil {
		return nil, nodeFailure(vmi, "locating the handler", err)
	}
	return ops, nil
}

func unavailable(msg string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure,
		Code: http.StatusServiceUnavailable, Reason: metav1.StatusReasonServiceUnavailable, Message: msg}}
}

// nodeFailure maps a nodeapi error to the answer: the sentinels to 404, 409
// and 503, anything else to 500, each naming the node.
func nodeFailure(vmi *virtv1.VirtualMachineInstance, what string, err error) error {
	where := fmt.Sprintf("%s of VirtualMachineInstance %s/%s on node %s", what, vmi.Namespace, vmi.Name, vmi.Status.NodeName)
	switch {
	case errors.Is(err, nodeapi.ErrNotFound):
		return apierrors.NewNotFound(vmiResource(), vmi.Name)
	case errors.Is(err, nodeapi.ErrConflict):
		return conflict(vmiResource(), vmi.Name, "%s: %v", where, err)
	case errors.Is(err, nodeapi.ErrUnavailable):
		return unavailable(fmt.Sprintf("%s: %v; check that virt-handler runs on node %s", where, err, vmi.Status.NodeName))
	}
	return apierrors.NewInternalError(fmt.Errorf("%s: %w", where, err))
}

// nodeVerb reads the VMI, checks it with validate, then asks its node.
func (s *Server) nodeVerb(ctx context.Context, req *request, dry bool, verb string,
	validate func(*virtv1.VirtualMachineInstance) error, call func(nodeapi.Ops, context.Context, string, string) error) error {
	vmi, err := s.getVMI(ctx, req, false)
	if err != nil {
		return err
	}
	if err := validate(vmi); err != nil {
		return err
	}
	ops, err := s.opsFor(ctx, vmi)
	if err != nil {
		return err
	}
	if dry {
		return req.ok()
	}
	if err := call(ops, ctx, vmi.Namespace, vmi.Name); err != nil {
		return nodeFailure(vmi, verb, err)
	}
	return req.ok()
}

// pause is PUT virtualmachineinstances/NAME/pause (v1.PauseOptions).
func (s *Server) pause(ctx context.Context, req *request) error {
	var opts virtv1.PauseOptions
	dry, err := requests.DecodeDry(req.w, req.r, &opts, &opts.DryRun, "v1.PauseOptions", `{}`)
	if err != nil {
		return err
	}
	return s.nodeVerb(ctx, req, dry, "pause", func(vmi *virtv1.VirtualMachineInstance) error {
		switch {
		case vmi.Status.Phase != virtv1.Running:
			return conflict(vmiResource(), vmi.Name, msgVMNotRunning)
		case vmi.Spec.LivenessProbe != nil:
			//lint:ignore ST1005 KubeVirt's wording, which clients match
			return apierrors.NewForbidden(vmiResource(), vmi.Name, errors.New("Pausing VMIs with LivenessProbe is currently not supported"))
		case hasCondition(vmi, virtv1.VirtualMachineInstancePaused):
			return conflict(vmiResource(), vmi.Name, "VMI is already paused")
		case vmi.Status.MigrationState != nil && !vmi.Status.MigrationState.Completed:
			return conflict(vmiResource(), vmi.Name, "Cannot pause VM '%s' because it is currently being migrated", vmi.Name)
		}
		return nil
	}, nodeapi.Ops.Pause)
}

// unpause is PUT virtualmachineinstances/NAME/unpause (v1.UnpauseOptions).
func (s *Server) unpause(ctx context.Context, req *request) error {
	var opts virtv1.UnpauseOptions
	dry, err := requests.DecodeDry(req.w, req.r, &opts, &opts.DryRun, "v1.UnpauseOptions", `{}`)
	if err != nil {
		return err
	}
	return s.nodeVerb(ctx, req, dry, "unpause", func(vmi *virtv1.VirtualMachineInstance) error {
		switch {
		case vmi.Status.Phase != virtv1.Running:
			return conflict(vmiResource(), vmi.Name, msgVMIRunning)
		case !hasCondition(vmi, virtv1.VirtualMachineInstancePaused):
			return conflict(vmiResource(), vmi.Name, "VMI is not paused")
		}
		return nil
	}, nodeapi.Ops.Unpause)
}

// softReboot is PUT virtualmachineinstances/NAME/softreboot: ACPI, or the
// guest agent when it is connected.
func (s *Server) softReboot(ctx context.Context, req *request) error {
	return s.nodeVerb(ctx, req, false, "soft reboot", func(vmi *virtv1.VirtualMachineInstance) error {
		switch {
		case vmi.Status.Phase != virtv1.Running:
			return conflict(vmiResource(), vmi.Name, msgVMNotRunning)
		case hasCondition(vmi, virtv1.VirtualMachineInstancePaused):
			return conflict(vmiResource(), vmi.Name, "VMI is paused")
		case !hasCondition(vmi, virtv1.VirtualMachineInstanceAgentConnected) && acpiDisabled(vmi):
			return conflict(vmiResource(), vmi.Name, "VMI neither have the agent connected nor the ACPI feature enabled")
		}
		return nil
	}, nodeapi.Ops.SoftReboot)
}

// reset is PUT virtualmachineinstances/NAME/reset: the guest's reset
// button, as KubeVirt's (no body, no dry run).
func (s *Server) reset(ctx context.Context, req *request) error {
	return s.nodeVerb(ctx, req, false, "reset", func(vmi *virtv1.VirtualMachineInstance) error {
		if !vmi.IsRunning() {
			return conflict(vmiResource(), vmi.Name, "Failed to reset non-running VMI with phase %s", vmi.Status.Phase)
		}
		return nil
	}, nodeapi.Ops.Reset)
}

func acpiDisabled(vmi *virtv1.VirtualMachineInstance) bool {
	f := vmi.Spec.Domain.Features
	return f != nil && f.ACPI.Enabled != nil && !*f.ACPI.Enabled
}

// console is GET (websocket) virtualmachineinstances/NAME/console.
func (s *Server) console(ctx context.Context, req *request) error {
	return s.stream(ctx, req, "console", func(vmi *virtv1.VirtualMachineInstance) error {
		if d := vmi.Spec.Domain.Devices.AutoattachSerialConsole; d != nil && !*d {
			return badRequest("No serial consoles are present.")
		}
		return nil
	}, nodeapi.Ops.Console)
}

// vnc is GET (websocket) virtualmachineinstances/NAME/vnc.
func (s *Server) vnc(ctx context.Context, req *request) error {
	return s.stream(ctx, req, "vnc", func(vmi *virtv1.VirtualMachineInstance) error {
		if d := vmi.Spec.Domain.Devices.AutoattachGraphicsDevice; d != nil && !*d {
			return badRequest("No graphics devices are present.")
		}
		return nil
	}, nodeapi.Ops.VNC)
}

// screenshot is GET virtualmachineinstances/NAME/vnc/screenshot: the
// guest's display as a PNG. KubeVirt's moveCursor parameter is accepted
// and, as in KubeVirt, changes nothing.
func (s *Server) screenshot(ctx context.Context, req *request) error {
	vmi, err := s.getVMI(ctx, req, false)
	if err != nil {
		return err
	}
	if d := vmi.Spec.Domain.Devices.AutoattachGraphicsDevice; d != nil && !*d {
		return badRequest("No graphics devices are present.")
	}
	if !vmi.IsRunning() {
		return badRequest("Unable to connect to VirtualMachineInstance because phase is %s instead of %s", vmi.Status.Phase, virtv1.Running)
	}
	ops, err := s.opsFor(ctx, vmi)
	if err != nil {
		return err
	}
	b, err := ops.Screenshot(ctx, vmi.Namespace, vmi.Name)
	if err != nil {
		return nodeFailure(vmi, "screenshot", err)
	}
	req.w.Header().Set("Content-Type", "image/png")
	req.w.WriteHeader(http.StatusOK)
	_, _ = req.w.Write(b)
	return nil
}

// stream opens the node's stream first, so every failure is still an HTTP
// status, then upgrades the caller's connection and splices the two.
func (s *Server) stream(ctx context.Context, req *request, verb string,
	validate func(*virtv1.VirtualMachineInstance) error, open func(nodeapi.Ops, context.Context, string, string) (io.ReadWriteCloser, error)) error {
	vmi, err := s.getVMI(ctx, req, false)
	if err != nil {
		return err
	}
	if !vmi.IsRunning() {
		return conflict(vmiResource(), vmi.Name, "Unable to connect to VirtualMachineInstance because phase is %s instead of %s", vmi.Status.Phase, virtv1.Running)
	}
	if err := validate(vmi); err != nil {
		return err
	}
	ops, err := s.opsFor(ctx, vmi)
	if err != nil {
		return err
	}
	guest, err := open(ops, ctx, vmi.Namespace, vmi.Name)
	if err != nil {
		return nodeFailure(vmi, verb, err)
	}
	ws, err := wsstream.Upgrader().Upgrade(req.w, req.r, nil)
	if err != nil {
		_ = guest.Close()
		return nil // the upgrader has answered with 400
	}
	defer s.observer.Stream(verb, vmi.Namespace, vmi.Name)()
	if err := wsstream.Splice(ctx, wsstream.New(ws), guest); err != nil {
		s.log.Info("stream ended with an error", "verb", verb, "namespace", vmi.Namespace, "name", vmi.Name, "error", err.Error())
	}
	return nil
}

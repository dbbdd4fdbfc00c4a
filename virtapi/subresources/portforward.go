package subresources

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/internal/wsstream"
)

// portForwardSubresource is the subresource RBAC sees for
// .../portforward/PORT[/PROTOCOL]: the port and protocol are not part of it.
const portForwardSubresource = "portforward"

// GuestDialer opens a connection to a guest's address, as net.Dialer's
// DialContext does; network is "tcp" or "udp".
type GuestDialer func(ctx context.Context, network, addr string) (net.Conn, error)

// guestDialTimeout bounds how long a port forward waits for the guest to
// answer a connection.
const guestDialTimeout = 10 * time.Second

// WithGuestDialer sets how portforward reaches a guest. The default dials
// the VMI's first interface address from virt-api's own network, as
// KubeVirt's virt-api does, which needs virt-api to reach pod addresses.
func WithGuestDialer(d GuestDialer) Option { return func(s *Server) { s.dialGuest = d } }

func defaultGuestDialer() GuestDialer {
	d := &net.Dialer{Timeout: guestDialTimeout}
	return d.DialContext
}

// vmiPortForward is GET (websocket)
// virtualmachineinstances/NAME/portforward/PORT[/PROTOCOL].
func (s *Server) vmiPortForward(ctx context.Context, req *request) error {
	return s.portForward(ctx, req, func() (*virtv1.VirtualMachineInstance, error) { return s.getVMI(ctx, req, false) })
}

// vmPortForward is GET (websocket)
// virtualmachines/NAME/portforward/PORT[/PROTOCOL]: the VM's running VMI.
func (s *Server) vmPortForward(ctx context.Context, req *request) error {
	return s.portForward(ctx, req, func() (*virtv1.VirtualMachineInstance, error) { return s.vmiOfVM(ctx, req) })
}

// vmiOfVM is the VMI a VM runs, as KubeVirt finds it for the VM's
// streams: 409 when the VM has not created one, 404 when it is gone.
func (s *Server) vmiOfVM(ctx context.Context, req *request) (*virtv1.VirtualMachineInstance, error) {
	vm, err := s.getVM(ctx, req)
	if err != nil {
		return nil, err
	}
	if !vm.Status.Created {
		return nil, conflict(vmResource(), vm.Name, "VMI is not started")
	}
	vmi, err := s.getVMI(ctx, req, false)
	if err != nil {
		return nil, err
	}
	if !metav1.IsControlledBy(vmi, vm) {
		return nil, conflict(vmResource(), vm.Name, "VirtualMachineInstance %s/%s is not the VM's own", vmi.Namespace, vmi.Name)
	}
	return vmi, nil
}

// forwardTarget is where a port forward goes: "tcp" or "udp" and the
// guest's address.
type forwardTarget struct {
	network, addr string
}

// parseForward reads PORT[/PROTOCOL] of a portforward path against vmi.
func parseForward(vmi *virtv1.VirtualMachineInstance, args []string) (forwardTarget, error) {
	if len(args) == 0 || len(args) > 2 || args[0] == "" {
		return forwardTarget{}, badRequest("port must not be empty: the call is .../portforward/PORT[/PROTOCOL]")
	}
	port, err := strconv.ParseUint(args[0], 10, 16)
	if err != nil || port == 0 {
		return forwardTarget{}, badRequest("port %q: must be a number from 1 to 65535", args[0])
	}
	network := "tcp"
	if len(args) == 2 {
		network = args[1]
	}
	if network != "tcp" && network != "udp" {
		return forwardTarget{}, badRequest("protocol %q: must be tcp or udp", network)
	}
	if hasCondition(vmi, virtv1.VirtualMachineInstancePaused) {
		return forwardTarget{}, conflict(vmiResource(), vmi.Name, "VMI is paused")
	}
	if len(vmi.Status.Interfaces) == 0 || vmi.Status.Interfaces[0].IP == "" {
		return forwardTarget{}, badRequest("VirtualMachineInstance %s/%s: no network interfaces are present (status.interfaces[0].ipAddress is empty)", vmi.Namespace, vmi.Name)
	}
	ip := net.ParseIP(vmi.Status.Interfaces[0].IP)
	if ip == nil {
		return forwardTarget{}, badRequest("VirtualMachineInstance %s/%s: status.interfaces[0].ipAddress %q is not an IP address", vmi.Namespace, vmi.Name, vmi.Status.Interfaces[0].IP)
	}
	return forwardTarget{network: network, addr: net.JoinHostPort(ip.String(), strconv.FormatUint(port, 10))}, nil
}

// portForward dials the guest first, so a refusal is still an HTTP status,
// then upgrades the caller's connection and splices the two: raw bytes in
// binary messages, subprotocol plain.kubevirt.io, as KubeVirt's.
func (s *Server) portForward(ctx context.Context, req *request, fetch func() (*virtv1.VirtualMachineInstance, error)) error {
	vmi, err := fetch()
	if err != nil {
		return err
	}
	if !vmi.IsRunning() {
		return conflict(vmiResource(), vmi.Name, "Unable to connect to VirtualMachineInstance because phase is %s instead of %s", vmi.Status.Phase, virtv1.Running)
	}
	to, err := parseForward(vmi, req.args)
	if err != nil {
		return err
	}
	guest, err := s.dialGuest(ctx, to.network, to.addr)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("dialing VM: %s %s of VirtualMachineInstance %s/%s: %w", to.network, to.addr, vmi.Namespace, vmi.Name, err))
	}
	ws, err := wsstream.Upgrader().Upgrade(req.w, req.r, nil)
	if err != nil {
		_ = guest.Close()
		return nil // the upgrader has answered with 400
	}
	defer s.observer.Stream(portForwardSubresource, vmi.Namespace, vmi.Name)()
	if err := wsstream.Splice(ctx, wsstream.New(ws), guest); err != nil {
		s.log.Info("stream ended with an error", "verb", portForwardSubresource, "namespace", vmi.Namespace, "name", vmi.Name, "error", err.Error())
	}
	return nil
}

package libvirt

import (
	"testing"

	"libvirt.org/go/libvirt"

	"github.com/virtkit/virtkit/virt/domain"
)

func TestKindOf(t *testing.T) {
	for _, tc := range []struct {
		op   string
		err  libvirt.Error
		want error
	}{
		{opStart, libvirt.Error{Code: libvirt.ERR_NO_DOMAIN}, domain.ErrNotFound},
		{opDefine, libvirt.Error{Code: libvirt.ERR_DOM_EXIST}, domain.ErrAlreadyExists},
		{opDefine, libvirt.Error{Code: libvirt.ERR_OPERATION_FAILED, Message: "domain 'a' already exists with uuid x"}, domain.ErrAlreadyExists},
		{opDefine, libvirt.Error{Code: libvirt.ERR_OPERATION_FAILED, Message: "domain 'a' is already defined with uuid x"}, domain.ErrAlreadyExists},
		{opDefine, libvirt.Error{Code: libvirt.ERR_XML_ERROR}, domain.ErrInvalidSpec},
		{opDefine, libvirt.Error{Code: libvirt.ERR_XML_DETAIL}, domain.ErrInvalidSpec},
		{opDefine, libvirt.Error{Code: libvirt.ERR_CONFIG_UNSUPPORTED}, domain.ErrInvalidSpec},
		{opPause, libvirt.Error{Code: libvirt.ERR_OPERATION_INVALID}, domain.ErrInvalidState},
		{opPause, libvirt.Error{Code: libvirt.ERR_INTERNAL_ERROR, Message: "domain 'a' not running"}, domain.ErrInvalidState},
		{opStart, libvirt.Error{Code: libvirt.ERR_INVALID_ARG, Message: "unsupported flags (0x1) in function x"}, domain.ErrUnsupported},
		{opConsole, libvirt.Error{Code: libvirt.ERR_NO_SUPPORT}, domain.ErrUnsupported},
		{opAgentPing, libvirt.Error{Code: libvirt.ERR_NO_SUPPORT}, domain.ErrAgentUnavailable},
		{opAgentPing, libvirt.Error{Code: libvirt.ERR_ARGUMENT_UNSUPPORTED, Message: "QEMU guest agent is not configured"}, domain.ErrAgentUnavailable},
		{opAgentCommand, libvirt.Error{Code: libvirt.ERR_AGENT_UNRESPONSIVE}, domain.ErrAgentUnavailable},
		{opAgentCommand, libvirt.Error{Code: libvirt.ERR_AGENT_UNSYNCED}, domain.ErrAgentUnavailable},
		{opAgentCommand, libvirt.Error{Code: libvirt.ERR_OPERATION_INVALID, Message: "domain is not running"}, domain.ErrAgentUnavailable},
		{opDetach, libvirt.Error{Code: libvirt.ERR_DEVICE_MISSING}, domain.ErrNotFound},
		{opList, libvirt.Error{Code: libvirt.ERR_NO_CONNECT}, domain.ErrConnectionLost},
		{opStart, libvirt.Error{Code: libvirt.ERR_INTERNAL_ERROR, Message: "qemu unexpectedly closed the monitor"}, nil},
	} {
		if got := kindOf(tc.op, tc.err); got != tc.want {
			t.Errorf("kindOf(%s, code %d %q) = %v, want %v", tc.op, tc.err.Code, tc.err.Message, got, tc.want)
		}
	}
}

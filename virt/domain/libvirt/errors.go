package libvirt

import (
	"errors"
	"strings"

	"libvirt.org/go/libvirt"

	"github.com/virtkit/virtkit/virt/domain"
)

// mapError turns a libvirt failure of op on the named domain into a
// *domain.Error with the sentinel a caller branches on. It also notices a
// broken connection, so that the next call dials again.
func (m *Manager) mapError(c *conn, op, name string, err error) error {
	if err == nil {
		return nil
	}
	var de *domain.Error
	if errors.As(err, &de) {
		return err
	}
	var le libvirt.Error
	if !errors.As(err, &le) {
		return &domain.Error{Op: op, Domain: name, Err: err}
	}
	e := &domain.Error{Op: op, Domain: name, Message: le.Message, Err: le}
	if connectionError(le.Code) {
		if alive, aerr := c.c.IsAlive(); aerr != nil || !alive {
			m.lost(c, le.Message)
			e.Kind = domain.ErrConnectionLost
			return e
		}
	}
	e.Kind = kindOf(op, le)
	return e
}

// kindOf picks the sentinel for a libvirt error code. libvirt's codes are
// coarse: the same code means different things for different operations, so
// a few cases look at the operation or the message.
func kindOf(op string, le libvirt.Error) error {
	// For the agent operations, every "not possible now" means that no
	// guest agent can answer.
	if op == opAgentPing || op == opAgentCommand {
		switch le.Code {
		case libvirt.ERR_AGENT_UNRESPONSIVE, libvirt.ERR_AGENT_UNSYNCED,
			// "QEMU guest agent is not configured"
			libvirt.ERR_ARGUMENT_UNSUPPORTED,
			// "domain is not running", "agent not available"
			libvirt.ERR_OPERATION_INVALID,
			// drivers without agents (test:///)
			libvirt.ERR_NO_SUPPORT:
			return domain.ErrAgentUnavailable
		}
	}
	// A domain without a video device: "no screens to take screenshot from".
	if op == opScreenshot && strings.Contains(le.Message, "no screens") {
		return domain.ErrUnsupported
	}
	switch le.Code {
	case libvirt.ERR_NO_DOMAIN:
		return domain.ErrNotFound
	case libvirt.ERR_DOM_EXIST:
		return domain.ErrAlreadyExists
	case libvirt.ERR_OPERATION_FAILED:
		// Defining a name that exists under another UUID: "domain 'x'
		// already exists with uuid ...".
		if strings.Contains(le.Message, "already exists") || strings.Contains(le.Message, "already defined") {
			return domain.ErrAlreadyExists
		}
	case libvirt.ERR_XML_ERROR, libvirt.ERR_XML_DETAIL, libvirt.ERR_XML_INVALID_SCHEMA,
		libvirt.ERR_CONFIG_UNSUPPORTED, libvirt.ERR_OS_TYPE, libvirt.ERR_NO_NAME,
		libvirt.ERR_NO_OS, libvirt.ERR_NO_SOURCE, libvirt.ERR_NO_TARGET, libvirt.ERR_NO_DEVICE,
		libvirt.ERR_INVALID_MAC:
		return domain.ErrInvalidSpec
	case libvirt.ERR_OPERATION_INVALID:
		return domain.ErrInvalidState
	case libvirt.ERR_INTERNAL_ERROR:
		// Some drivers (test:///) report state conflicts as internal errors:
		// "domain 'x' not paused", "... not running", "... already running".
		for _, s := range []string{"not running", "not paused", "already running"} {
			if strings.Contains(le.Message, s) {
				return domain.ErrInvalidState
			}
		}
	case libvirt.ERR_INVALID_ARG:
		// A flag the driver does not implement (test:/// and START_PAUSED).
		if strings.Contains(le.Message, "unsupported flags") {
			return domain.ErrUnsupported
		}
	case libvirt.ERR_NO_SUPPORT, libvirt.ERR_OPERATION_UNSUPPORTED:
		return domain.ErrUnsupported
	case libvirt.ERR_DEVICE_MISSING:
		// Detaching a device the domain does not have.
		return domain.ErrNotFound
	case libvirt.ERR_NO_CONNECT, libvirt.ERR_INVALID_CONN:
		return domain.ErrConnectionLost
	}
	return nil
}

// connectionError reports codes that a dead connection produces ("client
// socket is closed", "Cannot recv data", "End of file while reading data");
// whether the connection really is dead is then asked of libvirt.
func connectionError(code libvirt.ErrorNumber) bool {
	switch code {
	case libvirt.ERR_INTERNAL_ERROR, libvirt.ERR_RPC, libvirt.ERR_SYSTEM_ERROR,
		libvirt.ERR_NO_CONNECT, libvirt.ERR_INVALID_CONN, libvirt.ERR_OPERATION_FAILED:
		return true
	}
	return false
}

// message is an error's text without the Go binding's "virError(Code=...)"
// wrapping, for messages meant for people.
func message(err error) string {
	var le libvirt.Error
	if errors.As(err, &le) {
		return le.Message
	}
	return err.Error()
}

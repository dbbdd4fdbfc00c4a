package fake

import (
	"context"
	"encoding/json"
	"time"

	"github.com/virtkit/virtkit/virt/domain"
)

// FakeOS is the operating system name DefaultAgent reports.
const FakeOS = "fake guest OS"

// agentChannel is the virtio-serial channel name of the QEMU guest agent.
const agentChannel = "org.qemu.guest_agent.0"

// DefaultAgent models a QEMU guest agent with qemu-ga's replies: guest-ping,
// guest-info (version "fake"), guest-get-osinfo (FakeOS), guest-get-host-name
// (the domain's name), guest-get-timezone (UTC), no users, file systems or
// NICs, and a freeze that freezes nothing; anything else gets the agent's
// "command not found" error.
func DefaultAgent(name, command string) (string, error) {
	var req struct {
		Execute string `json:"execute"`
	}
	if err := json.Unmarshal([]byte(command), &req); err != nil || req.Execute == "" {
		return "", &domain.Error{Op: domain.OpGuestAgentCommand, Message: "internal error: unable to parse agent command: " + command}
	}
	switch req.Execute {
	case "guest-ping":
		return `{"return":{}}`, nil
	case "guest-info":
		return `{"return":{"version":"fake","supported_commands":[{"name":"guest-ping","enabled":true},{"name":"guest-info","enabled":true}]}}`, nil
	case "guest-get-osinfo":
		return `{"return":{"name":"` + FakeOS + `","id":"fake","pretty-name":"` + FakeOS + `","version-id":"1","kernel-release":"fake","machine":"x86_64"}}`, nil
	case "guest-get-host-name":
		h, _ := json.Marshal(map[string]any{"return": map[string]string{"host-name": name}})
		return string(h), nil
	case "guest-get-timezone":
		return `{"return":{"zone":"UTC","offset":0}}`, nil
	case "guest-get-users", "guest-get-fsinfo", "guest-network-get-interfaces":
		return `{"return":[]}`, nil
	case "guest-fsfreeze-freeze", "guest-fsfreeze-thaw":
		return `{"return":0}`, nil
	case "guest-fsfreeze-status":
		return `{"return":"thawed"}`, nil
	}
	return "", &domain.Error{Op: domain.OpGuestAgentCommand, Message: "internal error: unable to execute QEMU agent command '" + req.Execute + "': The command " + req.Execute + " has not been found"}
}

// GuestAgentPing sends guest-ping to the modelled agent; see domain.Manager.GuestAgentPing.
func (m *Manager) GuestAgentPing(ctx context.Context, name string) error {
	_, err := m.agentCall(ctx, domain.OpGuestAgentPing, name, `{"execute":"guest-ping"}`)
	return err
}

// GuestAgentCommand sends a command to the modelled agent; the timeout is
// not modelled (the agent answers at once); see domain.Manager.GuestAgentCommand.
func (m *Manager) GuestAgentCommand(ctx context.Context, name, command string, _ time.Duration) (string, error) {
	return m.agentCall(ctx, domain.OpGuestAgentCommand, name, command)
}

// agentCall answers when the domain runs and its document has the agent's
// channel, as libvirt requires.
func (m *Manager) agentCall(ctx context.Context, op, name, command string) (string, error) {
	var agent AgentFunc
	err := m.onDomain(ctx, op, name, func(d *fakeDomain) error {
		if d.state != domain.StateRunning {
			return &domain.Error{Op: op, Domain: name, Kind: domain.ErrAgentUnavailable, Message: "Requested operation is not valid: domain is not running"}
		}
		if !hasAgentChannel(d) {
			return &domain.Error{Op: op, Domain: name, Kind: domain.ErrAgentUnavailable, Message: "argument unsupported: QEMU guest agent is not configured"}
		}
		agent = m.agent
		if d.agent != nil {
			agent = d.agent
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	// Outside the lock: an injected agent may be slow or call back.
	reply, err := agent(name, command)
	if err != nil {
		if de, ok := err.(*domain.Error); ok {
			de.Op, de.Domain = op, name
			return "", de
		}
		return "", &domain.Error{Op: op, Domain: name, Err: err}
	}
	return reply, nil
}

func hasAgentChannel(d *fakeDomain) bool {
	if d.live == nil || d.live.Devices == nil {
		return false
	}
	for _, c := range d.live.Devices.Channels {
		if c.Target != nil && c.Target.VirtIO != nil && c.Target.VirtIO.Name == agentChannel {
			return true
		}
	}
	return false
}

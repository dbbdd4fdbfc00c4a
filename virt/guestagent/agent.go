package guestagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
)

// Commander sends one agent command (JSON such as {"execute":"guest-info"})
// to a domain's agent and returns its JSON reply; domain.Manager's
// GuestAgentCommand is one.
type Commander interface {
	GuestAgentCommand(ctx context.Context, domain, command string, timeout time.Duration) (string, error)
}

// CommandTimeout bounds how long the agent may take to answer one command.
const CommandTimeout = 5 * time.Second

// MaxItems bounds each list taken from the guest (users, file systems,
// interfaces and their addresses, commands), as KubeVirt bounds users and
// file systems: a guest cannot make the handler hold or write more.
const MaxItems = 64

// MaxText bounds each string taken from the guest (names, versions, paths
// as text): a guest cannot make the VMI's status or an answer grow past
// what its object may hold.
const MaxText = 256

// text is s cut to MaxText bytes, at a character boundary.
func text(s string) string {
	if len(s) <= MaxText {
		return s
	}
	s = s[:MaxText]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// ErrReply marks an answer that is not what the agent's protocol says.
var ErrReply = errors.New("guest agent: unexpected reply")

// call runs command (with arguments, when args is not nil) and decodes the
// "return" member of the reply into out.
func call(ctx context.Context, c Commander, domain, command string, args any, out any) error {
	req := map[string]any{"execute": command}
	if args != nil {
		req["arguments"] = args
	}
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	reply, err := c.GuestAgentCommand(ctx, domain, string(b), CommandTimeout)
	if err != nil {
		return fmt.Errorf("guest agent of domain %s: %s: %w", domain, command, err)
	}
	var env struct {
		Return json.RawMessage `json:"return"`
	}
	if err := json.Unmarshal([]byte(reply), &env); err != nil || env.Return == nil {
		return fmt.Errorf("guest agent of domain %s: %s: %w: %.200q", domain, command, ErrReply, reply)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(env.Return, out); err != nil {
		return fmt.Errorf("guest agent of domain %s: %s: %w: %v", domain, command, ErrReply, err)
	}
	return nil
}

// first returns at most MaxItems of s.
func first[T any](s []T) []T {
	if len(s) > MaxItems {
		return s[:MaxItems]
	}
	return s
}

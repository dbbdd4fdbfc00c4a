package registry

import (
	"fmt"
	"net"
	"path/filepath"

	"github.com/go-logr/logr"
)

// DefaultAddr is where the registry listens unless Config.Addr says
// otherwise: the address image references such as
// localhost:5000/virtkit/test-guest:latest name.
const DefaultAddr = "127.0.0.1:5000"

// Config is where a registry keeps its content and where it listens. The
// zero value of an optional field takes its default.
type Config struct {
	// Dir holds the registry's content, an OCI image layout, and the blobs
	// being uploaded under Dir/uploads (required). It is created if missing.
	Dir string
	// Addr is the loopback host:port to listen on (the registry has no
	// authentication, so only loopback is accepted: 127.0.0.0/8, ::1 or
	// localhost). Port 0 picks a free port; Registry.Addr tells which.
	// Default DefaultAddr.
	Addr string
	// Logger receives a line per pushed or deleted manifest and the
	// requests that fail on the registry's side.
	Logger logr.Logger
}

func (c Config) withDefaults() (Config, error) {
	if c.Dir == "" {
		return c, fmt.Errorf("registry: Config.Dir: required")
	}
	var err error
	if c.Dir, err = filepath.Abs(c.Dir); err != nil {
		return c, fmt.Errorf("registry: Config.Dir: %w", err)
	}
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	if err := checkLoopback(c.Addr); err != nil {
		return c, fmt.Errorf("registry: Config.Addr: %w", err)
	}
	if c.Logger.GetSink() == nil {
		c.Logger = logr.Discard()
	}
	return c, nil
}

// checkLoopback accepts host:port whose host is a loopback address or
// localhost.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%q: not a loopback address (the registry has no authentication)", addr)
	}
	return nil
}

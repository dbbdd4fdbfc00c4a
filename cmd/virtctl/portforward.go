package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/pflag"

	"github.com/virtkit/virtkit/internal/wsstream"
)

// forwardTarget is KubeVirt's TYPE/NAME[/NAMESPACE] argument.
type forwardTarget struct {
	resource  string // virtualmachines or virtualmachineinstances
	kind      string // kindVM or kindVMI, for messages
	name      string
	namespace string // empty: the session's
}

// parseForwardTarget reads TYPE/NAME[/NAMESPACE] as KubeVirt's virtctl does.
func parseForwardTarget(arg string) (forwardTarget, error) {
	parts := strings.Split(arg, "/")
	if len(parts) < 2 || len(parts) > 3 {
		return forwardTarget{}, fmt.Errorf("target %q: want TYPE/NAME or TYPE/NAME/NAMESPACE, as in vm/tiny", arg)
	}
	var t forwardTarget
	switch strings.ToLower(parts[0]) {
	case "vm", "vms", "virtualmachine", "virtualmachines":
		t.resource, t.kind = "virtualmachines", kindVM
	case "vmi", "vmis", "virtualmachineinstance", "virtualmachineinstances":
		t.resource, t.kind = "virtualmachineinstances", kindVMI
	default:
		return forwardTarget{}, fmt.Errorf("target %q: unsupported resource type %q: use vm or vmi", arg, parts[0])
	}
	t.name = parts[1]
	if t.name == "" {
		return forwardTarget{}, fmt.Errorf("target %q: the name is empty", arg)
	}
	if len(parts) == 3 {
		if t.namespace = parts[2]; t.namespace == "" {
			return forwardTarget{}, fmt.Errorf("target %q: the namespace is empty", arg)
		}
	}
	return t, nil
}

// forwardedPort is KubeVirt's [PROTOCOL/]LOCAL[:REMOTE] argument.
type forwardedPort struct {
	protocol      string // tcp or udp
	local, remote int
}

// parseForwardedPort reads [PROTOCOL/]LOCAL[:REMOTE]; REMOTE defaults to
// LOCAL. LOCAL 0 listens on a free port (and needs REMOTE).
func parseForwardedPort(arg string) (forwardedPort, error) {
	p := forwardedPort{protocol: "tcp"}
	rest := arg
	if proto, ports, ok := strings.Cut(arg, "/"); ok {
		p.protocol, rest = strings.ToLower(proto), ports
	}
	if p.protocol != "tcp" && p.protocol != "udp" {
		return p, fmt.Errorf("port %q: protocol %q: use tcp or udp", arg, p.protocol)
	}
	local, remote, hasRemote := strings.Cut(rest, ":")
	num := func(s, what string, min int) (int, error) {
		n, err := strconv.Atoi(s)
		if err != nil || n < min || n > 65535 {
			return 0, fmt.Errorf("port %q: the %s port %q must be a number from %d to 65535", arg, what, s, min)
		}
		return n, nil
	}
	var err error
	if p.local, err = num(local, "local", 0); err != nil {
		return p, err
	}
	p.remote = p.local
	if hasRemote {
		if p.remote, err = num(remote, "remote", 1); err != nil {
			return p, err
		}
	}
	if p.remote == 0 {
		return p, fmt.Errorf("port %q: local port 0 picks a free port; say which remote port, as in 0:80", arg)
	}
	return p, nil
}

func portForwardCommand() command {
	return command{name: "port-forward", use: "port-forward TYPE/NAME[/NAMESPACE] [PROTOCOL/]LOCAL[:REMOTE]...", args: 2, moreArgs: true,
		short: "Forward local ports to a virtual machine's guest, through the API server.",
		example: "  # Forward local port 8080 to port 80 of the guest of VM 'tiny':\n  virtctl port-forward vm/tiny 8080:80\n" +
			"  # Forward a UDP port of a VMI in namespace 'lab':\n  virtctl port-forward vmi/tiny/lab udp/5353:53\n" +
			"  # As an ssh ProxyCommand, on stdin and stdout:\n  ssh -o ProxyCommand='virtctl port-forward --stdio=true vm/tiny 22' user@tiny",
		setup: func(fs *pflag.FlagSet) action {
			stdio := fs.Bool("stdio", false, "Forward one port to stdin and stdout instead of listening.")
			address := fs.String("address", "127.0.0.1", "Local address the ports are opened on.")
			return func(ctx context.Context, s *session, args []string) error {
				target, err := parseForwardTarget(args[0])
				if err != nil {
					return &usageError{cmd: "port-forward", err: err}
				}
				var ports []forwardedPort
				for _, a := range args[1:] {
					p, err := parseForwardedPort(a)
					if err != nil {
						return &usageError{cmd: "port-forward", err: err}
					}
					ports = append(ports, p)
				}
				if err := s.connect(); err != nil {
					return err
				}
				if target.namespace != "" {
					s.ns = target.namespace
				}
				f := &forwarder{s: s, t: target}
				if *stdio {
					if len(ports) != 1 {
						return &usageError{cmd: "port-forward", err: errors.New("--stdio forwards exactly one port")}
					}
					return f.stdio(ctx, ports[0])
				}
				return f.listen(ctx, *address, ports)
			}
		}}
}

// forwarder opens one stream per local connection (TCP) or per local
// peer (UDP) to a guest port.
type forwarder struct {
	s *session
	t forwardTarget
}

func (f *forwarder) open(ctx context.Context, p forwardedPort) (io.ReadWriteCloser, error) {
	st, err := f.s.sub.PortForward(ctx, f.t.resource, f.s.ns, f.t.name, p.remote, p.protocol)
	if err != nil {
		return nil, f.s.explain(op{"port-forward to", f.t.kind, f.t.name}, err)
	}
	return st, nil
}

// stdio copies stdin to the stream and the stream to stdout until the
// stream ends (or copying stdin fails). It does not wait for a read of
// stdin to return: the process ends.
func (f *forwarder) stdio(ctx context.Context, p forwardedPort) error {
	st, err := f.open(ctx, p)
	if err != nil {
		return err
	}
	defer st.Close()
	in, out := make(chan error, 1), make(chan error, 1)
	go func() {
		_, err := io.Copy(st, f.s.stdin)
		in <- err
	}()
	go func() {
		_, err := io.Copy(f.s.stdout, st)
		out <- err
	}()
	// The end of stdin does not end the forward: what the guest still
	// sends is delivered until it closes (a client that is done kills
	// its ProxyCommand).
	for done := false; !done; {
		select {
		case err = <-out:
			done = true
		case err = <-in:
			in, done = nil, err != nil
		case <-ctx.Done():
			err, done = nil, true
		}
	}
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("port-forward to %s %s/%s: %w", f.t.kind, f.s.ns, f.t.name, err)
	}
	return nil
}

// listen opens every local port first, so a port in use fails the command
// at once, then forwards until ctx ends.
func (f *forwarder) listen(ctx context.Context, address string, ports []forwardedPort) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	var closers []io.Closer
	defer func() {
		for _, c := range closers {
			_ = c.Close()
		}
	}()
	for _, p := range ports {
		addr := net.JoinHostPort(address, strconv.Itoa(p.local))
		var serve func()
		var local net.Addr
		switch p.protocol {
		case "tcp":
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("cannot listen on tcp %s: %w; pick another local port or --address", addr, err)
			}
			closers, local = append(closers, ln), ln.Addr()
			serve = func() { f.serveTCP(ctx, ln, p) }
		case "udp":
			pc, err := net.ListenPacket("udp", addr)
			if err != nil {
				return fmt.Errorf("cannot listen on udp %s: %w; pick another local port or --address", addr, err)
			}
			closers, local = append(closers, pc), pc.LocalAddr()
			serve = func() { f.serveUDP(ctx, pc, p) }
		}
		fmt.Fprintf(f.s.stdout, "Forwarding from %s -> %d (%s)\n", local, p.remote, p.protocol)
		wg.Add(1)
		go func() {
			defer wg.Done()
			serve()
		}()
	}
	<-ctx.Done()
	for _, c := range closers {
		_ = c.Close()
	}
	return nil
}

func (f *forwarder) serveTCP(ctx context.Context, ln net.Listener, p forwardedPort) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			return // closed when ctx ends
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := f.open(ctx, p)
			if err != nil {
				fmt.Fprintf(f.s.stderr, "connection from %s: %v\n", c.RemoteAddr(), err)
				_ = c.Close()
				return
			}
			if err := wsstream.Splice(ctx, c, st); err != nil && ctx.Err() == nil {
				fmt.Fprintf(f.s.stderr, "connection from %s: %v\n", c.RemoteAddr(), err)
			}
		}()
	}
}

// serveUDP gives each local peer its own stream: its datagrams go to the
// guest, and what the guest sends back returns to it.
func (f *forwarder) serveUDP(ctx context.Context, pc net.PacketConn, p forwardedPort) {
	var mu sync.Mutex
	peers := map[string]io.ReadWriteCloser{}
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, st := range peers {
			_ = st.Close()
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return // closed when ctx ends
		}
		mu.Lock()
		st, ok := peers[from.String()]
		mu.Unlock()
		if !ok {
			if st, err = f.open(ctx, p); err != nil {
				fmt.Fprintf(f.s.stderr, "datagram from %s: %v\n", from, err)
				continue
			}
			mu.Lock()
			peers[from.String()] = st
			mu.Unlock()
			go func(st io.ReadWriteCloser, to net.Addr) {
				back := make([]byte, 64<<10)
				for {
					n, err := st.Read(back)
					if n > 0 {
						_, _ = pc.WriteTo(back[:n], to)
					}
					if err != nil {
						mu.Lock()
						delete(peers, to.String())
						mu.Unlock()
						_ = st.Close()
						return
					}
				}
			}(st, from)
		}
		if _, err := st.Write(buf[:n]); err != nil {
			fmt.Fprintf(f.s.stderr, "datagram from %s: %v\n", from, err)
		}
	}
}

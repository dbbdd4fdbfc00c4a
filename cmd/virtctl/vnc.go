package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/virtkit/virtkit/internal/wsstream"
)

// lookPath finds a program in $PATH.
var lookPath = exec.LookPath

// vncViewers are the viewers vnc starts, in KubeVirt's order, with their
// arguments for a server at addr.
var vncViewers = []struct {
	bin  string
	args func(addr string) []string
}{
	{"remote-viewer", func(addr string) []string { return []string{"vnc://" + addr} }},
	{"vncviewer", func(addr string) []string { return []string{addr} }},
}

func vncCommand() command {
	return command{name: "vnc", use: "vnc (VMI)", short: "Open a VNC connection to a virtual machine through a local proxy.", args: 1,
		subs: []command{vncScreenshotCommand()},
		example: "  # Open the screen of 'tiny' in remote-viewer or vncviewer:\n  virtctl vnc tiny\n" +
			"  # Only serve the proxy, on port 5901, and connect a viewer yourself:\n  virtctl vnc tiny --proxy-only --port=5901",
		setup: func(fs *pflag.FlagSet) action {
			proxyOnly := fs.Bool("proxy-only", false, "If true, start no viewer: print {\"port\":N} and serve VNC clients on that port until Ctrl+C.")
			port := fs.Int("port", 0, "Local port of the proxy; 0 picks a free one.")
			address := fs.String("address", "127.0.0.1", "Local address of the proxy.")
			return func(ctx context.Context, s *session, args []string) error {
				if err := s.connect(); err != nil {
					return err
				}
				o := op{"vnc", kindVMI, args[0]}
				// Open one stream first, so a refusal is an error now
				// rather than when a viewer connects.
				first, err := s.sub.VNC(ctx, s.ns, o.name)
				if err != nil {
					return s.explain(o, err)
				}
				ln, err := net.Listen("tcp", net.JoinHostPort(*address, strconv.Itoa(*port)))
				if err != nil {
					_ = first.Close()
					return fmt.Errorf("cannot listen for VNC clients on %s:%d: %w; pick another --port or --address", *address, *port, err)
				}
				p := &vncProxy{s: s, o: o, ln: ln, first: first}
				addr := net.JoinHostPort(*address, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
				if !*proxyOnly {
					if bin, vargs, ok := s.findViewer(addr); ok {
						return p.withViewer(ctx, bin, vargs)
					}
					fmt.Fprintf(s.stderr, "No VNC viewer (remote-viewer, vncviewer) in $PATH: serving the proxy only; connect a viewer to %s, Ctrl+C stops.\n", addr)
				}
				b, _ := json.Marshal(struct {
					Port int `json:"port"`
				}{ln.Addr().(*net.TCPAddr).Port})
				fmt.Fprintln(s.stdout, string(b))
				return p.serve(ctx)
			}
		}}
}

func (s *session) findViewer(addr string) (string, []string, bool) {
	for _, v := range vncViewers {
		if bin, err := s.lookPath(v.bin); err == nil {
			return bin, v.args(addr), true
		}
	}
	return "", nil, false
}

// vncProxy serves local VNC clients, each over its own stream to the VMI.
type vncProxy struct {
	s     *session
	o     op
	ln    net.Listener
	mu    sync.Mutex
	first io.ReadWriteCloser // opened before listening; the first client gets it
}

// serve accepts clients until ctx ends.
func (p *vncProxy) serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		<-ctx.Done()
		_ = p.ln.Close()
	}()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				p.closeFirst()
				return nil
			}
			return fmt.Errorf("accepting VNC clients: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.handle(ctx, c)
		}()
	}
}

func (p *vncProxy) closeFirst() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.first != nil {
		_ = p.first.Close()
		p.first = nil
	}
}

// handle splices one client to a stream to the VMI.
func (p *vncProxy) handle(ctx context.Context, c net.Conn) {
	p.mu.Lock()
	stream := p.first
	p.first = nil
	p.mu.Unlock()
	if stream == nil {
		var err error
		if stream, err = p.s.sub.VNC(ctx, p.s.ns, p.o.name); err != nil {
			fmt.Fprintf(p.s.stderr, "VNC client %s: %v\n", c.RemoteAddr(), p.s.explain(p.o, err))
			_ = c.Close()
			return
		}
	}
	if err := wsstream.Splice(ctx, c, stream); err != nil {
		fmt.Fprintf(p.s.stderr, "VNC client %s: %v\n", c.RemoteAddr(), err)
	}
}

// withViewer serves the proxy while a viewer runs, and ends with it.
func (p *vncProxy) withViewer(ctx context.Context, bin string, args []string) error {
	serving, stop := context.WithCancel(ctx)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- p.serve(serving) }()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = p.s.stderr, p.s.stderr
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	stop()
	<-served
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("%s: %w", bin, err)
	}
	return nil
}

func vncScreenshotCommand() command {
	return command{name: "vnc screenshot", use: "vnc screenshot (VMI)", short: "Save a PNG screenshot of a virtual machine instance's display.", args: 1,
		example: "  # Save the screen of 'tiny':\n  virtctl vnc screenshot tiny -f screenshot.png\n" +
			"  # Show it at once:\n  virtctl vnc screenshot tiny -f - | display",
		setup: func(fs *pflag.FlagSet) action {
			file := fs.StringP("file", "f", "", "Where to write the PNG; - writes it to stdout. Required.")
			fs.BoolP("move-cursor", "m", false, "Accepted for KubeVirt's virtctl's sake; changes nothing, as there.")
			return func(ctx context.Context, s *session, args []string) error {
				if *file == "" {
					return &usageError{cmd: "vnc screenshot", err: errors.New("--file is required: a path, or - for stdout")}
				}
				if err := s.connect(); err != nil {
					return err
				}
				png, err := s.sub.Screenshot(ctx, s.ns, args[0])
				if err != nil {
					return s.explain(op{"take a screenshot of", kindVMI, args[0]}, err)
				}
				if *file == "-" {
					_, err = s.stdout.Write(png)
					return err
				}
				if err := os.WriteFile(*file, png, 0o644); err != nil {
					return fmt.Errorf("writing the screenshot of %s/%s: %w", s.ns, args[0], err)
				}
				return nil
			}
		}}
}

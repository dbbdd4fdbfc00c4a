package hollow

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/confined"
	"github.com/virtkit/virtkit/virt/domain"
	domainfake "github.com/virtkit/virtkit/virt/domain/fake"
	"github.com/virtkit/virtkit/virt/launcher"
	"github.com/virtkit/virtkit/virt/launcher/contract"
	"github.com/virtkit/virtkit/virt/libvirtd"
)

// launcher prepares p as a hollow virt-launcher started with args, and
// returns its run: virt/launcher's Run with a fake domain Manager behind a
// socket in the per-VMI folder; run returns the launcher's exit code.
func (n *Node) launcher(p *process, args []string) (func(context.Context) int, error) {
	dir, ns, name := flagValue(args, contract.FlagDir), flagValue(args, contract.FlagNamespace), flagValue(args, contract.FlagName)
	if dir == "" || ns == "" || name == "" {
		return nil, fmt.Errorf("hollow: %s %s: --%s, --%s and --%s are required", contract.Binary, strings.Join(args[1:], " "),
			contract.FlagDir, contract.FlagNamespace, contract.FlagName)
	}
	grace := 30 * time.Second
	if v := flagValue(args, contract.FlagGracePeriod); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("hollow: %s --%s %q: want a duration that is not negative", contract.Binary, contract.FlagGracePeriod, v)
		}
		grace = d
	}
	host, err := hostPath(p.mounts, dir)
	if err != nil {
		return nil, fmt.Errorf("hollow: %s --%s %s: %w", contract.Binary, contract.FlagDir, dir, err)
	}
	// The termination message, as the launcher binary writes it.
	term, _ := hostPath(p.mounts, corev1.TerminationMessagePathDefault)
	hp := &pod{pid: p.ref.PID, dom: domainfake.New(), root: p.root}
	cfg := launcher.Config{Layout: launcher.Layout{Root: host}, Domain: launcher.DomainName(ns, name), GracePeriod: grace}
	p.mu.Lock()
	p.onKill = func() { _ = hp.dom.Destroy(context.Background(), cfg.Domain) }
	p.mu.Unlock()
	log := n.log.WithValues("vmi", ns+"/"+name, "pid", p.ref.PID)
	connect := func(context.Context, string) (domain.Manager, error) { return shared{hp.dom}, nil }
	start := func(ctx context.Context, lc libvirtd.Config, _ logr.Logger) (launcher.Daemon, error) {
		d, err := n.listen(lc, hp)
		if err != nil {
			return nil, err // not a nil *daemon in a non-nil interface
		}
		return d, nil
	}
	return func(ctx context.Context) int {
		res := launcher.Run(ctx, cfg, connect, launcher.WithDaemonStarter(start),
			launcher.WithPollInterval(n.poll), launcher.WithLogger(log))
		if term != "" {
			writeExisting(term, res.Reason+"\n")
		}
		return res.Code
	}, nil
}

// writeExisting writes s into the file at path if it exists and is a
// regular file, as the launcher binary writes its termination message (a
// link is not followed, a fifo does not block the open).
func writeExisting(path, s string) {
	f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && f.Truncate(0) == nil {
		_, _ = f.WriteString(s)
	}
}

// flagValue is the value of --name (or -name) in args, as "--name value" or
// "--name=value"; "" when absent.
func flagValue(args []string, name string) string {
	for i, a := range args {
		a = strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

// shared is a pod's fake Manager as one connection: closing it leaves the
// fake to the launcher's and the handler's other connections.
type shared struct{ domain.Manager }

func (shared) Close() error { return nil }

// daemon stands for a pod's libvirtd: the socket at its place, which the
// handler finds in the folder and opens.
type daemon struct {
	n    *Node
	id   fileID
	dir  *confined.Root // the socket's folder, until the socket is gone
	ln   net.Listener
	uri  string
	once sync.Once
	done chan struct{}
}

var _ launcher.Daemon = (*daemon)(nil)

// listen makes lc's socket and registers hp behind it.
func (n *Node) listen(lc libvirtd.Config, hp *pod) (*daemon, error) {
	socket := lc.Paths().Socket
	if err := os.MkdirAll(filepath.Dir(socket), 0o700); err != nil {
		return nil, fmt.Errorf("hollow: %w", err)
	}
	// Through a handle of the folder: the node's path of a pod's folder is
	// longer than a unix socket's address may be.
	dir, err := confined.Open(filepath.Dir(socket), confined.InRoot)
	if err != nil {
		return nil, fmt.Errorf("hollow: %w", err)
	}
	name := filepath.Base(socket)
	if err := dir.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		dir.Close()
		return nil, fmt.Errorf("hollow: %w", err)
	}
	ln, err := dir.ListenUnix(name)
	if err != nil {
		dir.Close()
		return nil, fmt.Errorf("hollow: %w", err)
	}
	id, err := idOf(socket)
	if err != nil {
		ln.Close()
		dir.Close()
		return nil, fmt.Errorf("hollow: %w", err)
	}
	d := &daemon{n: n, id: id, dir: dir, ln: ln, uri: lc.URI(), done: make(chan struct{})}
	n.register(id, hp)
	return d, nil
}

func (d *daemon) URI() string           { return d.uri }
func (d *daemon) Done() <-chan struct{} { return d.done }

// Stop removes the socket and what it stood for.
func (d *daemon) Stop(context.Context) error {
	var err error
	d.once.Do(func() {
		d.n.unregister(d.id)
		err = errors.Join(d.ln.Close(), d.dir.Close())
		close(d.done)
	})
	return err
}

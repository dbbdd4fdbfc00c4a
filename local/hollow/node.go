package hollow

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"

	"github.com/virtkit/virtkit/local/node"
	"github.com/virtkit/virtkit/local/node/nodefake"
	domainfake "github.com/virtkit/virtkit/virt/domain/fake"
)

// Node is the hollow part of one node: its launchers, and what its handler
// reaches them through. It is safe for concurrent use.
type Node struct {
	dir    string
	log    logr.Logger
	poll   time.Duration
	labels pprof.LabelSet

	mu sync.Mutex
	// pods are the running launchers' pods, by their libvirt socket's
	// file identity: the handler opens the socket through a handle
	// (/proc/self/fd/N), whose target is the one thing it names.
	pods map[fileID]*pod
	// procs are the running processes, by PID.
	procs   map[int]*process
	nextPID int
}

// pod is what the handler reaches of one hollow launcher pod.
type pod struct {
	pid  int
	dom  *domainfake.Manager
	root string // the pod's files as the handler sees them
}

// fileID identifies a file on the node.
type fileID struct{ dev, ino uint64 }

func idOf(path string) (fileID, error) {
	st, err := os.Stat(path)
	if err != nil {
		return fileID{}, err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, fmt.Errorf("hollow: %s: no file identity on this system", path)
	}
	return fileID{dev: uint64(sys.Dev), ino: sys.Ino}, nil //nolint:unconvert // Dev's type differs by GOARCH
}

// Option changes a Node.
type Option func(*Node)

// WithLogger sets the logger of the launchers. The default discards.
func WithLogger(l logr.Logger) Option { return func(n *Node) { n.log = l } }

// WithProfileLabels labels the goroutines of the launchers (and other
// containers) with pprof labels, key value pairs, so that a CPU profile
// tells their work from the rest of the process's.
func WithProfileLabels(keyValues ...string) Option {
	return func(n *Node) { n.labels = pprof.Labels(keyValues...) }
}

// WithPollInterval sets how often each launcher reads its domain's state
// besides its events (virt/launcher's WithPollInterval); default
// DefaultPollInterval.
func WithPollInterval(d time.Duration) Option { return func(n *Node) { n.poll = d } }

// DefaultPollInterval is a hollow launcher's poll: the fake's events are
// never lost, so polling is a backstop, kept rare so that a thousand
// launchers cost little.
const DefaultPollInterval = 5 * time.Second

// firstPID is the first PID a hollow process reports: far above what the
// kernel hands out by default, so that no probe mistakes one for a real
// process.
const firstPID = 1 << 30

// New returns a hollow node that keeps its images under dir (created).
func New(dir string, opts ...Option) (*Node, error) {
	if dir == "" {
		return nil, errors.New("hollow: New: a folder is required")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("hollow: %w", err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("hollow: %w", err)
	}
	n := &Node{dir: abs, log: logr.Discard(), poll: DefaultPollInterval,
		pods: map[fileID]*pod{}, procs: map[int]*process{}, nextPID: firstPID}
	for _, o := range opts {
		o(n)
	}
	return n, nil
}

// goLabelled runs f in a goroutine of its own with the Node's profile labels.
func (n *Node) goLabelled(ctx context.Context, f func(context.Context)) {
	go pprof.Do(ctx, n.labels, f)
}

// NodeOptions are the local/node options that make a node hollow: its
// process runner, its network (local/node/nodefake's) and its image store.
func (n *Node) NodeOptions() []node.Option {
	return []node.Option{
		node.WithProcessRunner(n.Runner()),
		node.WithNetwork(&nodefake.Network{}),
		node.WithImageStore(n.Images()),
	}
}

// Runner is the node's process runner: launchers run in this process,
// anything else is a process that waits to be stopped.
func (n *Node) Runner() node.ProcessRunner { return runner{n} }

// Images is the node's image store: every image is a folder with one empty
// disk file, disk/DiskFile, as a containerDisk image is laid out.
func (n *Node) Images() node.ImageStore { return images{dir: filepath.Join(n.dir, "images")} }

// Launchers returns how many launchers run now.
func (n *Node) Launchers() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.pods)
}

func (n *Node) register(id fileID, p *pod) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.pods[id] = p
}

func (n *Node) unregister(id fileID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.pods, id)
}

// podAt is the pod whose libvirt socket is at path.
func (n *Node) podAt(path string) (*pod, error) {
	id, err := idOf(path)
	if err != nil {
		return nil, fmt.Errorf("hollow: %w", err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	p, ok := n.pods[id]
	if !ok {
		return nil, fmt.Errorf("hollow: %s: no hollow launcher listens there", path)
	}
	return p, nil
}

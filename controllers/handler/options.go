package handler

import (
	"errors"
	"io/fs"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/virt"
	"github.com/virtkit/virtkit/virt/launcher"
	"github.com/virtkit/virtkit/virt/launcher/contract"
	"github.com/virtkit/virtkit/virt/storage"
)

// Config is what one node's handler is. It is plain data, read once.
type Config struct {
	// NodeName is the node the handler runs on (required): it takes the
	// VMIs whose status.nodeName is this.
	NodeName string
	// PodsDir is the node's kubelet pods folder (its --root-dir's pods),
	// where each launcher pod's folder is its emptyDir
	// (contract.PodFolder): a launcher.Layout root as the node sees it,
	// where the handler finds the launcher's libvirt socket, ready and exit
	// files, console and VNC sockets. Default /var/lib/kubelet/pods
	// (contract.PodsDir).
	PodsDir string
	// PodRunDir is where the launcher pod sees the same folders,
	// PodRunDir/<vmi uid>. The paths written into the domain (console and
	// VNC sockets, console log) are below it, because QEMU runs in the pod.
	// Default /var/run/virtkit (controllers/vmi.PodRunDir).
	PodRunDir string
	// StateDir is a node folder, private to the handler, where it keeps per
	// VMI the plans it started the VMI with (<uid>.json), so that a
	// restarted handler can adopt the guest and later tear down exactly
	// what was set up. Default /var/run/virtkit/handler.
	StateDir string
	// Emulation runs every guest of the node under software emulation
	// (TCG), whatever the KubeVirt CR says: for a node whose KVM must not
	// be used. It is configuration: /dev/kvm is never probed. Without it,
	// the CR's developerConfiguration.useEmulation decides at each start.
	Emulation bool
	// KubeVirtNamespace is where the KubeVirt CR lives, whose
	// useEmulation the handler reads at each guest's start; empty:
	// clusterconfig.DefaultNamespace.
	KubeVirtNamespace string
	// StorageLayout is where launcher pods keep volumes, as the pod sees
	// them; the zero value is KubeVirt's layout (storage.DefaultLayout).
	StorageLayout storage.Layout
	// MigrationAddress is what the handler writes as
	// status.migrationState.targetNodeAddress of a migration to this node
	// once the target is prepared: where a source's MigrationDialer reaches
	// this handler, the host:port of its ServeMigrations for
	// TCPMigrationDialer. Default NodeName, for LocalMigrationDialer, which
	// needs no address.
	MigrationAddress string
}

// Defaults of Config.
const (
	DefaultPodsDir   = contract.PodsDir
	DefaultPodRunDir = contract.PodRunDir
	DefaultStateDir  = contract.HandlerStateDir
	// DefaultMigrationPort is the port a handler's ServeMigrations
	// listens on by default, next to the node API's.
	DefaultMigrationPort = 8185
	// DefaultLauncherLostTimeout is how long a VMI whose launcher stopped
	// answering without leaving a result stays as it is before it fails.
	DefaultLauncherLostTimeout = 30 * time.Second
)

func (c Config) withDefaults() Config {
	if c.PodsDir == "" {
		c.PodsDir = DefaultPodsDir
	}
	if c.PodRunDir == "" {
		c.PodRunDir = DefaultPodRunDir
	}
	if c.StateDir == "" {
		c.StateDir = DefaultStateDir
	}
	if c.MigrationAddress == "" {
		c.MigrationAddress = c.NodeName
	}
	return c
}

// Validate reports the first field that makes c unusable.
func (c Config) Validate() error {
	if c.NodeName == "" {
		return errors.New("handler: Config.NodeName: required")
	}
	return nil
}

// Connector opens a domain Manager on a launcher's libvirt URI; the daemon
// passes virt/domain/libvirt's constructor (the only cgo), tests may pass a
// fake. It has the shape of launcher.Connector.
type Connector = launcher.Connector

// StorageFor returns the storage Manager that plans and prepares the disks of
// a launcher pod whose file system is files (the pod's root opened with
// virt/confined, InRoot), and the Inspector hotplug checks the pod's files
// with. The default is storage.New with Config.StorageLayout and
// storage.WithFS(files).
type StorageFor func(files storage.FS) (storage.Interface, storage.Inspector)

// Option changes a Reconciler.
type Option func(*Reconciler)

// WithConnector sets how the handler reaches a launcher's libvirt
// (required).
func WithConnector(c Connector) Option { return func(r *Reconciler) { r.connect = c } }

// WithImageBinder sets how hotplugged images reach launcher pods (default
// NodeBinder on Config.PodsDir).
func WithImageBinder(b ImageBinder) Option { return func(r *Reconciler) { r.binder = b } }

// WithPodOpener sets how the handler finds a launcher pod's network
// namespace and file system from its libvirt socket. The default is
// OpenPod (the socket's peer credentials and /proc).
func WithPodOpener(o PodOpener) Option { return func(r *Reconciler) { r.openPod = o } }

// WithNodeFS sets the node's file system, rooted at its "/", where the
// handler reads the host facts of each launcher pod (virt/hostfacts: its
// cpuset, the NUMA cells, the hugepage sizes). The default is
// os.DirFS("/").
func WithNodeFS(node fs.FS) Option { return func(r *Reconciler) { r.nodeFS = node } }

// WithStorage sets how the handler makes the storage Manager of a pod.
func WithStorage(f StorageFor) Option { return func(r *Reconciler) { r.storageFor = f } }

// WithClock sets the clock for condition and phase timestamps, grace
// periods and timeouts. The default is the real clock.
func WithClock(c clock.PassiveClock) Option { return func(r *Reconciler) { r.clock = c } }

// WithLogger sets the logger for what the handler does outside a reconcile
// (event streams, adoption at start). Reconciles log through the context's
// logger, as controller-runtime sets it. The default discards.
func WithLogger(l logr.Logger) Option { return func(r *Reconciler) { r.log = l } }

// WithEventRecorder sets where the handler's events about VMIs go: the
// Warning events of StatusWarnings and the Normal event of a reset. SetupWithManager uses the manager's recorder unless
// one is set; the default otherwise drops events.
func WithEventRecorder(rec EventRecorder) Option { return func(r *Reconciler) { r.recorder = rec } }

// WithClient sets the client the handler reads VMIs through (the manager's
// cache) and writes status with, and the uncached reader for what it reads
// rarely (secrets, claims, a VMI missing from the cache). SetupWithManager
// uses the manager's unless set; tests wrap them to count writes.
func WithClient(c client.Client, uncached client.Reader) Option {
	return func(r *Reconciler) { r.client, r.reader = c, uncached }
}

// WithMachineOptions adds options to every virt.Machine the handler makes,
// after its own: edit the start-up chain (virt.WithSteps), add conversion
// options, and so on.
func WithMachineOptions(opts ...virt.Option) Option {
	return func(r *Reconciler) { r.machineOpts = append(r.machineOpts, opts...) }
}

// WithLauncherLostTimeout sets how long a VMI stays as it is after its
// launcher stopped answering without leaving a result, before it is Failed
// (default DefaultLauncherLostTimeout).
func WithLauncherLostTimeout(d time.Duration) Option {
	return func(r *Reconciler) { r.lostTimeout = d }
}

// WithMigrationDialer sets how the source's handler reaches a migration's
// target launcher (see MigrationDialer): TCPMigrationDialer between
// machines, LocalMigrationDialer between nodes of one machine. Without
// one, a migration out of this node fails at its first connection.
func WithMigrationDialer(d MigrationDialer) Option { return func(r *Reconciler) { r.dialer = d } }

// WithMaxConcurrentReconciles sets how many VMIs the handler works on at
// once (default 10, as KubeVirt's handler): a start holds its worker while
// the launcher's libvirt defines and starts the guest, about 4 s under
// emulation while other guests boot, so with fewer workers the starts of
// VMIs created together wait in the queue.
func WithMaxConcurrentReconciles(n int) Option { return func(r *Reconciler) { r.workers = n } }

// WithSteps edits the start-up chain of every Machine the handler makes:
// edit receives virt.DefaultSteps with the handler's StepSaveState in it and
// returns the chain to run, edited by name (virt.Steps.InsertAfter, Replace,
// Remove, ...); an error fails the guest's start. Keep StepSaveState, or a
// restarted handler cannot adopt the guests. (Do not pass virt.WithSteps to
// WithMachineOptions: it would drop the handler's step.)
func WithSteps(edit func(virt.Steps) (virt.Steps, error)) Option {
	return func(r *Reconciler) { r.editSteps = edit }
}

// WithStartObserver has the handler tell o how long each stage of every
// guest's start took (StartObserver); metrics.NewStartStages is one.
func WithStartObserver(o StartObserver) Option { return func(r *Reconciler) { r.starts = o } }

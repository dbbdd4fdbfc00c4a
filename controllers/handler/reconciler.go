package handler

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/virtkit/virtkit/controllers/events"
	"github.com/virtkit/virtkit/controllers/handler/state"
	"github.com/virtkit/virtkit/controllers/stale"
	"github.com/virtkit/virtkit/virt"
	"github.com/virtkit/virtkit/virt/launcher"
	"github.com/virtkit/virtkit/virt/launcher/contract"
	"github.com/virtkit/virtkit/virt/storage"
)

// How often the handler looks again while it waits for something that sends
// no event: a launcher becoming ready, a launcher that stopped answering.
const (
	readyPoll = 500 * time.Millisecond
	lostPoll  = time.Second
	// callTimeout bounds one libvirt call of a reconcile.
	callTimeout = 30 * time.Second
)

// Reconciler is the node's handler: a controller-runtime reconciler over the
// VMIs of one node, each driven through a virt.Machine on its launcher's
// libvirt, and the node API (nodeapi.Ops) for those VMIs. Build it with New,
// then call SetupWithManager.
type Reconciler struct {
	cfg         Config
	client      client.Client
	reader      client.Reader
	connect     Connector
	openPod     PodOpener
	storageFor  StorageFor
	clock       clock.PassiveClock
	log         logr.Logger
	recorder    EventRecorder
	machineOpts []virt.Option
	editSteps   func(virt.Steps) (virt.Steps, error)
	lostTimeout time.Duration
	workers     int
	states      state.Store
	pods        launcherPods
	nodeFS      fs.FS
	starts      StartObserver
	waits       startWaits
	binder      ImageBinder

	// events carries the keys of VMIs whose domain or launcher connection
	// reported something; the controller watches it.
	events chan event.TypedGenericEvent[types.NamespacedName]
	// targetEvents carries the keys of migrations whose target launcher,
	// on this node, reported something (reconcileTarget).
	targetEvents chan event.TypedGenericEvent[types.NamespacedName]
	// ready wakes a VMI whose launcher became ready (see readyWatch).
	ready  *readyWatch
	dialer MigrationDialer

	mu     sync.Mutex
	guests map[types.NamespacedName]*guest
	// targets are the guests prepared as migration targets on this node,
	// by migration, until they are taken over (then they move to guests).
	targets map[types.NamespacedName]*guest
	// lost is when a launcher, by VMI uid, was first found not answering
	// without a result; cleared when it answers.
	lost map[types.UID]time.Time
	// retries spaces the starts of guests that failed to start.
	retries startRetries
	// versions are the VMI versions the handler's status writes replaced.
	versions stale.Guard
	// closed is set by Close: guests taken up afterwards are let go at once.
	closed bool
}

var _ reconcile.Reconciler = (*Reconciler)(nil)

// New returns the handler for cfg. A Connector (WithConnector) is required.
func New(cfg Config, opts ...Option) (*Reconciler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	r := &Reconciler{
		cfg:         cfg,
		openPod:     OpenPod,
		nodeFS:      os.DirFS("/"),
		clock:       clock.RealClock{},
		log:         logr.Discard(),
		recorder:    events.Discard(),
		starts:      nopStarts{},
		lostTimeout: DefaultLauncherLostTimeout,
		binder:      NodeBinder{PodsDir: cfg.PodsDir},
		workers:     10,
		states:      state.Store{Dir: cfg.StateDir},
		events:      make(chan event.TypedGenericEvent[types.NamespacedName], 256),
		guests:      map[types.NamespacedName]*guest{},
		targets:     map[types.NamespacedName]*guest{},

		targetEvents: make(chan event.TypedGenericEvent[types.NamespacedName], 64),
		lost:         map[types.UID]time.Time{},
	}
	for _, o := range opts {
		o(r)
	}
	if r.connect == nil {
		return nil, errors.New("handler: WithConnector: required (virt/domain/libvirt's New in the daemon)")
	}
	r.ready = newReadyWatch(func(key types.NamespacedName) {
		select {
		case r.events <- event.TypedGenericEvent[types.NamespacedName]{Object: key}:
		default: // a full queue: the poll finds it
		}
	})
	if r.dialer == nil {
		r.dialer = noMigrationDialer{}
	}
	if r.storageFor == nil {
		layout := cfg.StorageLayout
		r.storageFor = func(files storage.FS) (storage.Interface, storage.Inspector) {
			// The images it makes are the qemu user's, as QEMU runs as
			// that user whether libvirt changes owners or not.
			return storage.New(storage.WithLayout(layout), storage.WithFS(files), storage.WithLogger(r.log),
					storage.WithOwner(contract.QEMUUser, contract.QEMUGroup)),
				storage.FSInspector{FS: files}
		}
	}
	return r, nil
}

// podLayout is the launcher folder as the launcher pod (and QEMU) sees it,
// PodRunDir/<vmi uid>, whatever the node's folder: the same in every
// launcher pod of the VMI, so that the domain's paths hold on both ends of
// a migration.
func (r *Reconciler) podLayout(uid types.UID) launcher.Layout {
	return launcher.Layout{Root: filepath.Join(r.cfg.PodRunDir, string(uid))}
}

// folderOf is the folder key (see launcherPod) of the launcher that runs
// vmi's guest: the one its state record names; else, after a completed migration to this
// node, the migration's target folder; else the VMI's own.
func (r *Reconciler) folderOf(vmi *virtv1.VirtualMachineInstance, rec *state.Record) types.UID {
	if rec != nil && rec.Folder != "" {
		return rec.Folder
	}
	if ms := vmi.Status.MigrationState; ms != nil && ms.Completed && !ms.Failed && ms.TargetNode == r.cfg.NodeName && ms.MigrationUID != "" {
		return ms.MigrationUID
	}
	return vmi.UID
}

// Reconcile brings one VMI of this node a step closer to what it asks for:
// it starts the guest of a Scheduled VMI once its launcher is ready, adopts
// the guest of a running VMI after a handler restart, reports the domain's
// state, stops the guest of a deleted VMI within its grace period, and ends
// the VMI when its guest or launcher ended, leaving nothing set up behind.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	key := req.NamespacedName
	vmi := &virtv1.VirtualMachineInstance{}
	if err := r.client.Get(ctx, key, vmi); err != nil {
		if apierrors.IsNotFound(err) {
			r.versions.Forget(key)
			r.retries.forget(key)
			r.waits.forget(key)
			return ctrl.Result{}, r.gone(ctx, key)
		}
		return ctrl.Result{}, fmt.Errorf("handler: read VirtualMachineInstance %s: %w", key, err)
	}
	if r.versions.Stale(key, vmi.ResourceVersion) {
		return ctrl.Result{RequeueAfter: stale.RetryAfter}, nil
	}
	res, err := r.reconcile(ctx, key, vmi)
	switch {
	case apierrors.IsConflict(err):
		// Someone else wrote the VMI meanwhile; look again, quietly.
		return ctrl.Result{RequeueAfter: stale.RetryAfter}, nil
	case apierrors.IsNotFound(err):
		return ctrl.Result{}, nil // deleted meanwhile: its delete event follows
	}
	return res, err
}

func (r *Reconciler) reconcile(ctx context.Context, key types.NamespacedName, vmi *virtv1.VirtualMachineInstance) (ctrl.Result, error) {
	if vmi.Status.NodeName != r.cfg.NodeName {
		return ctrl.Result{}, r.elsewhere(ctx, key)
	}
	g := r.guest(key)
	if g != nil && g.uid != vmi.UID {
		// The name now belongs to a new VMI; the old one's guest goes.
		if err := r.gone(ctx, key); err != nil {
			return ctrl.Result{}, err
		}
		g = nil
	}
	if vmi.IsFinal() {
		if g != nil {
			r.finish(ctx, g)
			r.forget(g)
		} else if rec, ok, err := r.states.Load(vmi.UID); err == nil && ok {
			return ctrl.Result{}, r.stopRecorded(ctx, rec)
		}
		return ctrl.Result{}, r.states.Remove(vmi.UID)
	}
	if g == nil {
		var res ctrl.Result
		var err error
		g, res, err = r.attach(ctx, vmi)
		if g == nil {
			return res, err
		}
	}
	return r.sync(ctx, vmi, g)
}

// writeStatus writes st as vmi's status when it differs: a merge patch of
// the status subresource, guarded by vmi's resourceVersion.
func (r *Reconciler) writeStatus(ctx context.Context, vmi *virtv1.VirtualMachineInstance, st virtv1.VirtualMachineInstanceStatus) error {
	if equality.Semantic.DeepEqual(vmi.Status, st) {
		return nil
	}
	updated := vmi.DeepCopy()
	updated.Status = st
	err := r.client.Status().Patch(ctx, updated, client.MergeFromWithOptions(vmi, client.MergeFromWithOptimisticLock{}))
	if err != nil {
		return fmt.Errorf("handler: status of VirtualMachineInstance %s/%s (phase %s): %w", vmi.Namespace, vmi.Name, st.Phase, err)
	}
	logf.FromContext(ctx).V(1).Info("status written", "phase", st.Phase, "reason", st.Reason)
	r.versions.Replaced(client.ObjectKeyFromObject(vmi), vmi.ResourceVersion, updated.ResourceVersion)
	r.warn(vmi, st)
	*vmi = *updated
	return nil
}

// guest returns the guest the handler runs for key, nil if none.
func (r *Reconciler) guest(key types.NamespacedName) *guest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.guests[key]
}

func (r *Reconciler) setLost(uid types.UID, lost bool) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !lost {
		delete(r.lost, uid)
		return time.Time{}
	}
	t, ok := r.lost[uid]
	if !ok {
		t = r.clock.Now()
		r.lost[uid] = t
	}
	return t
}

package handler

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/virtkit/virtkit/controllers/handler/state"
	"github.com/virtkit/virtkit/virt"
	"github.com/virtkit/virtkit/virt/confined"
	"github.com/virtkit/virtkit/virt/domain"
	"github.com/virtkit/virtkit/virt/hostfacts"
	"github.com/virtkit/virtkit/virt/launcher"
	"github.com/virtkit/virtkit/virt/launcher/contract"
	"github.com/virtkit/virtkit/virt/libvirtd"
	"github.com/virtkit/virtkit/virt/spec"
)

// errLauncherUnreachable marks a launcher whose libvirt cannot be reached:
// not started yet, ended, or hung.
var errLauncherUnreachable = errors.New("launcher unreachable")

// attach takes up the guest of a VMI the handler does not drive yet: it
// starts the guest of a Scheduled VMI once the launcher is ready, and adopts
// the guest an earlier handler started (a state record exists, or the VMI
// runs already). Without a guest to drive it returns nil and when to look again.
func (r *Reconciler) attach(ctx context.Context, vmi *virtv1.VirtualMachineInstance) (*guest, ctrl.Result, error) {
	rec, persisted, err := r.states.Load(vmi.UID)
	if err != nil {
		return nil, ctrl.Result{}, err
	}
	if persisted || vmi.Status.Phase == virtv1.Running {
		var plans *state.Record
		if persisted {
			plans = &rec
		}
		return r.adopt(ctx, vmi, plans)
	}
	return r.start(ctx, vmi)
}

// start defines and starts the guest of a Scheduled VMI whose launcher is
// ready. A failed start leaves nothing set up (the Machine undoes its
// steps) and is reported as Synchronized=False, then retried after a wait
// that doubles with each failure (startRetries).
func (r *Reconciler) start(ctx context.Context, vmi *virtv1.VirtualMachineInstance) (*guest, ctrl.Result, error) {
	if vmi.Status.Phase != virtv1.Scheduled || vmi.DeletionTimestamp != nil {
		return nil, ctrl.Result{}, nil
	}
	host, err := r.hostLayout(ctx, vmi, r.folderOf(vmi, nil))
	if errors.Is(err, errNoLauncherPod) {
		return nil, ctrl.Result{RequeueAfter: readyPoll}, nil
	}
	if err != nil {
		return nil, ctrl.Result{}, err
	}
	key := client.ObjectKeyFromObject(vmi)
	r.waits.look(key, vmi.UID, r.clock.Now())
	if d := r.retries.wait(key, vmi.UID, r.clock.Now()); d > 0 {
		return nil, ctrl.Result{RequeueAfter: d}, nil
	}
	if msg, err := r.dataVolumeNotReady(ctx, vmi); err != nil || msg != "" {
		if err == nil {
			err = r.holdForDataVolume(ctx, vmi, msg)
		}
		return nil, ctrl.Result{RequeueAfter: dataVolumePoll}, err
	}
	if ready, _ := launcherReady(host); !ready {
		if _, ended, _ := launcher.ReadResult(host); ended {
			// The launcher ended before it was ready: the VMI controller
			// fails the VMI from its pod.
			return nil, ctrl.Result{}, nil
		}
		// The ready file's arrival wakes the VMI (readyWatch), the poll
		// being the fallback; it may have come just before the watch.
		if !r.ready.wait(key, host.Root, r.cfg.PodsDir) {
			return nil, ctrl.Result{RequeueAfter: readyPoll}, nil
		}
		if again, _ := launcherReady(host); !again {
			return nil, ctrl.Result{RequeueAfter: readyPoll}, nil
		}
	}
	readyAt := r.clock.Now()
	g, err := r.open(ctx, vmi, nil)
	opened := r.clock.Now()
	if err == nil {
		if err = g.machine.Start(ctx); err != nil {
			_ = g.close()
		}
	}
	if err != nil {
		if errors.Is(err, errLauncherUnreachable) {
			// Ready a moment ago: it may be ending, or slow. Look again.
			logf.FromContext(ctx).Info("launcher not reachable yet", "error", err.Error())
			return nil, ctrl.Result{RequeueAfter: readyPoll}, nil
		}
		// The error brings the VMI back soon; it then waits out d.
		d := r.retries.failed(key, vmi.UID, r.clock.Now())
		logf.FromContext(ctx).Info("the guest did not start", "retryIn", d.String())
		return nil, ctrl.Result{}, errors.Join(err, r.syncFailed(ctx, vmi, err))
	}
	r.retries.forget(key)
	r.starts.ObserveStart(StageLauncherReady, r.waits.done(key, vmi.UID, readyAt))
	r.starts.ObserveStart(StageConnect, opened.Sub(readyAt))
	g.startedAt = r.clock.Now()
	logf.FromContext(ctx).Info("guest started", "domain", g.domain)
	r.register(g)
	return g, ctrl.Result{}, nil
}

// adopt takes over a guest an earlier handler started, without disturbing
// it: the domain keeps running, the network set-up stays, the DHCP servers
// run again from this process, and events are followed again. A launcher
// that ended meanwhile ends the VMI as its result says.
func (r *Reconciler) adopt(ctx context.Context, vmi *virtv1.VirtualMachineInstance, rec *state.Record) (*guest, ctrl.Result, error) {
	log := logf.FromContext(ctx)
	g, err := r.open(ctx, vmi, rec)
	if err != nil {
		if !errors.Is(err, errLauncherUnreachable) {
			return nil, ctrl.Result{}, err
		}
		if vmi.Status.Phase != virtv1.Running {
			// A start an earlier handler did not finish, in a launcher that
			// is gone: the VMI controller fails the VMI from its pod.
			return nil, ctrl.Result{}, r.states.Remove(vmi.UID)
		}
		res, err := r.launcherGone(ctx, vmi, r.folderOf(vmi, rec))
		return nil, res, err
	}
	r.setLost(vmi.UID, false)
	err = g.machine.Adopt(ctx)
	if err != nil && !errors.Is(err, domain.ErrNotFound) {
		// Nothing of the earlier handler was undone; try again later.
		_ = g.close()
		return nil, ctrl.Result{}, err
	}
	if vmi.Status.Phase != virtv1.Running {
		// An earlier handler was starting this guest. Unless the domain
		// runs, undo what it did and start again.
		st, _, serr := g.dom.State(ctx, g.domain)
		if err != nil || serr != nil || !active(st) {
			log.Info("an earlier start did not finish; starting again", "domain", g.domain)
			r.finish(ctx, g)
			return nil, ctrl.Result{RequeueAfter: readyPoll}, r.states.Remove(vmi.UID)
		}
	}
	log.Info("guest adopted", "domain", g.domain)
	r.register(g)
	return g, ctrl.Result{}, nil
}

// launcherGone ends a running VMI whose launcher cannot be reached: as its
// result says once it left one, else Failed once it has been silent for the
// lost timeout.
func (r *Reconciler) launcherGone(ctx context.Context, vmi *virtv1.VirtualMachineInstance, folder types.UID) (ctrl.Result, error) {
	var at *launcher.Layout // nil once the pod, and its folder with the result, are gone
	switch host, err := r.hostLayout(ctx, vmi, folder); {
	case err == nil:
		at = &host
	case !errors.Is(err, errNoLauncherPod):
		return ctrl.Result{}, err
	}
	e, res := r.launcherEnding(vmi, at)
	if e == nil {
		return res, nil
	}
	if err := r.writeStatus(ctx, vmi, Status(vmi, Facts{Ending: e}, r.clock.Now())); err != nil {
		return ctrl.Result{}, err
	}
	r.setLost(vmi.UID, false)
	return ctrl.Result{}, r.states.Remove(vmi.UID)
}

// launcherEnding is how a VMI whose launcher (in the node folder host; nil
// when its pod is gone) does not answer ends: its result, or lost after
// the timeout; nil and when to look again otherwise.
func (r *Reconciler) launcherEnding(vmi *virtv1.VirtualMachineInstance, host *launcher.Layout) (*Ending, ctrl.Result) {
	if host != nil {
		if res, ended, err := launcher.ReadResult(*host); err == nil && ended {
			e := LauncherEnding(res)
			return &e, ctrl.Result{}
		}
	}
	if e := LostEnding(r.setLost(vmi.UID, true), r.clock.Now(), r.lostTimeout); e != nil {
		return e, ctrl.Result{}
	}
	return nil, ctrl.Result{RequeueAfter: lostPoll}
}

// open connects to the VMI's launcher and pod and builds its Machine, not
// started; rec gives the plans an earlier handler kept.
func (r *Reconciler) open(ctx context.Context, vmi *virtv1.VirtualMachineInstance, rec *state.Record) (g *guest, err error) {
	return r.openIn(ctx, vmi, rec, r.folderOf(vmi, rec), nil)
}

// openIn is open for the launcher in the node folder folder. With target
// set, the launcher is the target of that migration: the Machine's chain
// prepares storage and network as for a start but defines and starts no
// domain (it comes by migration; the steps undo it all the same), and the
// domain events go to the migration's reconcile.
func (r *Reconciler) openIn(ctx context.Context, vmi *virtv1.VirtualMachineInstance, rec *state.Record, folder types.UID, target *types.NamespacedName) (g *guest, err error) {
	key := client.ObjectKeyFromObject(vmi)
	host, err := r.hostLayout(ctx, vmi, folder)
	if errors.Is(err, errNoLauncherPod) {
		return nil, fmt.Errorf("%w: %w", errLauncherUnreachable, err)
	}
	if err != nil {
		return nil, err
	}
	podUID, err := r.launcherPod(ctx, vmi, folder, r.cfg.NodeName)
	if err != nil {
		return nil, err
	}
	g = &guest{key: key, uid: vmi.UID, folder: folder, host: host, podUID: podUID, creds: vmi.Spec.AccessCredentials}
	g.target.Store(target)
	opened := g // the result is nil on error; what was opened must still close
	defer func() {
		if err != nil {
			_ = opened.close()
		}
	}()
	callCtx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if g.dir, err = launcher.OpenFolder(g.host); err != nil {
		return nil, fmt.Errorf("handler: VMI %s: %w: %w", key, errLauncherUnreachable, err)
	}
	// libvirt's client dials by path: it gets one that reaches the very
	// socket found in the folder without following a link the pod made.
	socket, release, err := g.dir.LibvirtSocket()
	if err != nil {
		return nil, fmt.Errorf("handler: VMI %s: %w: %w", key, errLauncherUnreachable, err)
	}
	g.socket = release
	if g.dom, err = r.connect(callCtx, libvirtd.SocketURI(socket)); err != nil {
		return nil, fmt.Errorf("handler: VMI %s: %w: %w", key, errLauncherUnreachable, err)
	}
	if g.pod, err = r.openPod(callCtx, socket); err != nil {
		return nil, fmt.Errorf("handler: VMI %s: %w: %w", key, errLauncherUnreachable, err)
	}
	if g.files, err = openPodFiles(g.pod.Root); err != nil {
		return nil, fmt.Errorf("handler: VMI %s: %w: %w", key, errLauncherUnreachable, err)
	}
	g.storage, g.inspect = r.storageFor(g.files)
	facts, claims, err := r.podFacts(ctx, vmi, g.files)
	if err != nil {
		return nil, err
	}
	g.claims = claims
	// The pod's cpuset (exclusive CPUs under the kubelet's static CPU
	// manager), the node's NUMA cells and hugepage sizes: what
	// dedicatedCpuPlacement and hugepages need.
	hf, err := hostfacts.Read(r.nodeFS, g.pod.PID)
	if err != nil {
		return nil, fmt.Errorf("handler: VMI %s: %w", key, err)
	}
	defaulted := vmi.DeepCopy()
	spec.DefaultVMI(defaulted)
	pod := r.podLayout(vmi.UID)
	steps, err := r.steps(vmi, folder, target != nil)
	if err != nil {
		return nil, fmt.Errorf("handler: VMI %s: %w", key, err)
	}
	emulate, err := r.emulation(ctx)
	if err != nil {
		return nil, fmt.Errorf("handler: VMI %s: %w", key, err)
	}
	opts := []virt.Option{
		virt.WithDomainManager(g.dom),
		virt.WithStorage(g.storage, facts),
		virt.WithHost(domain.Host{Emulation: emulate, CPU: hf.CPU, HugepageSizes: hf.HugepageSizes, Paths: domain.Paths{
			SerialConsole:    pod.SerialSocket(),
			SerialConsoleLog: pod.SerialLog(),
			VNC:              pod.VNCSocket(),
			// libvirt's own, where backend storage is mounted for
			// persistent EFI variables.
			NVRAMDir: contract.NVRAMDir,
		}}),
		virt.WithLogger(r.log.WithValues("vmi", key.String())),
		virt.WithSteps(steps),
	}
	if g.pod.Network != nil {
		opts = append(opts, virt.WithNetwork(g.pod.Network))
	}
	if rec != nil {
		opts = append(opts, virt.WithPlans(rec.Storage, rec.Network))
	}
	if g.machine, err = virt.New(defaulted, append(opts, r.machineOpts...)...); err != nil {
		return nil, err
	}
	g.domain = g.machine.DomainName()
	// Subscribe before anything starts, so no event is missed.
	evCtx, stop := context.WithCancel(context.Background())
	g.stopEvents = stop
	ch, err := g.dom.Events(evCtx)
	if err != nil {
		return nil, fmt.Errorf("handler: VMI %s: %w: %w", key, errLauncherUnreachable, err)
	}
	go r.forward(evCtx, g, ch)
	go r.pollAgent(evCtx, g)
	return g, nil
}

// StepSaveState is the step the handler adds to the start-up chain, after
// the plans are made and before anything is set up: it keeps the plans on
// the node (Config.StateDir) for a restarted handler, and removes them when
// the chain is undone.
const StepSaveState = "save-state"

// saveState keeps m's plans on the node for a restarted handler.
func (r *Reconciler) saveState(vmi *virtv1.VirtualMachineInstance, folder types.UID, m *virt.Machine) error {
	return r.states.Save(state.Record{Namespace: vmi.Namespace, Name: vmi.Name, UID: vmi.UID, Folder: folder,
		Storage: m.StoragePlan, Network: m.NetworkPlan})
}

// steps is the start-up chain of vmi's Machine, whose launcher has the node
// folder folder: virt.DefaultSteps with the state record saved once both
// plans are made, edited by WithSteps. For a migration's target (incoming)
// the define and start steps run nothing (incomingSteps).
func (r *Reconciler) steps(vmi *virtv1.VirtualMachineInstance, folder types.UID, incoming bool) (virt.Steps, error) {
	save := virt.Step{
		Name: StepSaveState,
		Run: func(_ context.Context, m *virt.Machine) error {
			return r.saveState(vmi, folder, m)
		},
		Undo: func(context.Context, *virt.Machine) error { return r.states.Remove(vmi.UID) },
	}
	out, err := startChain(save)
	if err != nil {
		return nil, err
	}
	if incoming {
		if out, err = incomingSteps(out); err != nil {
			return nil, err
		}
	}
	if r.editSteps != nil {
		if out, err = r.editSteps(out); err != nil {
			return nil, err
		}
	}
	if incoming {
		return out, nil // a migration's target: not a start
	}
	return r.timedSteps(out), nil
}

// active reports whether a domain in state st has a guest that runs (or is
// paused, or shutting down).
func active(st domain.State) bool {
	switch st {
	case domain.StateRunning, domain.StateBlocked, domain.StatePaused, domain.StateShutdown, domain.StatePMSuspended:
		return true
	}
	return false
}

// launcherReady reports whether the launcher in the node folder host has
// its ready file.
func launcherReady(host launcher.Layout) (bool, error) {
	f, err := launcher.OpenFolder(host)
	if err != nil {
		return false, err
	}
	defer f.Close()
	return f.Ready()
}

// openPodFiles opens the pod's file system, root as Pod.Root gives it ("" is
// the node's own), so that every path in it is resolved as the pod sees it
// and never leaves it.
func openPodFiles(root string) (*confined.Root, error) {
	if root == "" {
		root = "/"
	}
	return confined.Open(root, confined.InRoot)
}

package node

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit/virt/network"
)

// podRun runs one pod: set-up (network, volumes), containers, probes,
// termination and tear-down, reporting each change of status.
type podRun struct {
	p                    *Provider
	key, namespace, name string
	uid                  types.UID
	dir                  string
	log                  logr.Logger

	pubMu sync.Mutex // orders publications

	mu       sync.Mutex
	pod      *corev1.Pod // the pod as last reported, status included
	facts    podFacts
	procs    map[string]Process // running containers
	att      Attachment
	vols     map[string]hostVolume
	netTried bool
	// netMu keeps a change of a running pod's secondary networks and the
	// pod's teardown apart.
	netMu sync.Mutex
	// Stopping: requested by delete or shutdown, ending by deadline.
	stopping, deleted, finished, gone bool
	deadline                          time.Time
	stop                              chan struct{} // closed when stopping starts
	kick                              chan struct{} // the deadline moved
	done                              chan struct{} // closed when run returned
}

func newPodRun(p *Provider, pod *corev1.Pod) *podRun {
	pod = pod.DeepCopy()
	r := &podRun{p: p, key: podKey(pod.Namespace, pod.Name), namespace: pod.Namespace, name: pod.Name, uid: pod.UID,
		dir: p.cfg.podDir(string(pod.UID)), log: p.log.WithValues("pod", podKey(pod.Namespace, pod.Name)),
		pod: pod, procs: map[string]Process{},
		stop: make(chan struct{}), kick: make(chan struct{}, 1), done: make(chan struct{})}
	waiting := func(c corev1.Container, reason string) corev1.ContainerStatus {
		f := false
		return corev1.ContainerStatus{Name: c.Name, Image: c.Image, Started: &f,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
	}
	regular := "ContainerCreating"
	if len(pod.Spec.InitContainers) > 0 {
		regular = "PodInitializing"
	}
	for _, c := range pod.Spec.InitContainers {
		r.facts.InitContainers = append(r.facts.InitContainers, waiting(c, "PodInitializing"))
	}
	for _, c := range pod.Spec.Containers {
		r.facts.Containers = append(r.facts.Containers, waiting(c, regular))
	}
	r.pod.Status = podStatus(r.pod, r.facts, r.now())
	return r
}

func (r *podRun) now() metav1.Time { return metav1.NewTime(r.p.opts.clock.Now()).Rfc3339Copy() }

// run is the pod's life; it returns once the pod is torn down.
func (r *podRun) run(ctx context.Context) {
	defer close(r.done)
	r.update(func(f *podFacts) {
		t := r.now()
		f.StartTime, f.HostIP = &t, r.p.hostIP
	})
	r.publish()
	if r.prepare(ctx) {
		exited := make(chan struct{})
		go r.terminator(ctx, exited)
		r.runContainers(ctx)
		close(exited)
	}
	r.teardown()
	r.finish()
}

// prepare sets up the network and the volumes, retrying with back-off until
// they are ready (true) or the pod is stopped (false).
func (r *podRun) prepare(ctx context.Context) bool {
	backoff := r.p.opts.backoff
	last := ""
	for {
		err := r.setup(ctx)
		if err == nil {
			return true
		}
		reason := "ContainerCreating"
		var se *setupError
		if errors.As(err, &se) {
			reason = se.reason
		}
		if err.Error() != last { // the same failure again is not news
			r.log.Info("pod set-up failed; retrying", "reason", reason, "error", err.Error(), "after", backoff)
			last = err.Error()
		}
		r.update(func(f *podFacts) {
			for _, list := range [][]corev1.ContainerStatus{f.InitContainers, f.Containers} {
				for i := range list {
					list[i].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: err.Error()}}
				}
			}
		})
		r.publish()
		if !r.sleep(backoff) {
			return false
		}
		backoff = min(2*backoff, r.p.opts.maxBackoff)
	}
}

// setupError is a set-up failure with the reason containers wait for.
type setupError struct {
	reason string
	err    error
}

func (e *setupError) Error() string { return e.err.Error() }
func (e *setupError) Unwrap() error { return e.err }

// setup connects the network once, then writes the volumes.
func (r *podRun) setup(ctx context.Context) error {
	r.mu.Lock()
	up := r.facts.SandboxReady
	spec := r.pod.Spec.DeepCopy()
	networks := r.pod.Annotations[network.MultusNetworksAnnotation]
	r.mu.Unlock()
	if !up {
		var att Attachment
		if spec.HostNetwork {
			att.IPs = []string{r.p.hostIP}
		} else {
			r.mu.Lock()
			r.netTried = true
			r.mu.Unlock()
			r.save()
			pn := r.podNetwork()
			sel, err := ParseMultusNetworks(networks, r.namespace)
			if err == nil {
				pn.Secondary, err = resolveMultus(ctx, r.p.client, sel)
			}
			if err != nil {
				return &setupError{reason: "ContainerCreating", err: err}
			}
			att, err = r.p.opts.network.Setup(ctx, pn)
			if err != nil {
				return &setupError{reason: "ContainerCreating", err: err}
			}
		}
		r.update(func(f *podFacts) {
			f.SandboxReady, f.PodIPs = true, att.IPs
			r.att = att
		})
		r.publish()
		// The annotation may have changed while the network was set up.
		r.annotationChanged(networks)
	}
	return r.prepareVolumes(ctx)
}

func (r *podRun) podNetwork() PodNetwork {
	return PodNetwork{ID: string(r.uid), Namespace: r.namespace, Name: r.name, Dir: r.dir}
}

// terminator carries out a stop request while containers run: SIGTERM
// to each container's process, SIGKILL to what is left at the deadline.
func (r *podRun) terminator(ctx context.Context, exited <-chan struct{}) {
	select {
	case <-r.stop:
	case <-exited:
		return
	}
	for _, p := range r.running() {
		_ = p.Signal(sigterm)
	}
	for {
		r.mu.Lock()
		wait := time.Until(r.deadline)
		r.mu.Unlock()
		select {
		case <-exited:
			return
		case <-r.kick:
			continue
		case <-time.After(max(wait, 0)):
		}
		break
	}
	for _, p := range r.running() {
		if err := r.p.opts.runner.Kill(ctx, p.Ref()); err != nil {
			r.log.Error(err, "killing a container at the end of its grace period")
		}
	}
}

func (r *podRun) running() []Process {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Process, 0, len(r.procs))
	for _, p := range r.procs {
		out = append(out, p)
	}
	return out
}

// sleep waits d, or returns false at once when the pod is stopping.
func (r *podRun) sleep(d time.Duration) bool {
	select {
	case <-r.stop:
		return false
	case <-time.After(d):
		return true
	}
}

func (r *podRun) isStopping() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stopping
}

// requestStop starts stopping the pod with grace seconds for its
// containers; a later request may only shorten the grace period.
func (r *podRun) requestStop(grace int64) {
	deadline := time.Now().Add(time.Duration(max(grace, 0)) * time.Second)
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case !r.stopping:
		r.stopping, r.deadline = true, deadline
		r.facts.Terminating = true
		close(r.stop)
	case deadline.Before(r.deadline):
		r.deadline = deadline
		select {
		case r.kick <- struct{}{}:
		default:
		}
	}
}

// delete stops the pod; once torn down it is forgotten and removed from
// the API.
func (r *podRun) delete(grace int64) {
	r.mu.Lock()
	r.deleted = true
	finished := r.finished
	r.mu.Unlock()
	if finished {
		r.p.forget(r)
		return
	}
	r.requestStop(grace)
}

// shutdown stops the pod because the node stops.
func (r *podRun) shutdown(grace int64) {
	r.mu.Lock()
	if r.finished {
		r.mu.Unlock()
		return
	}
	r.facts.Shutdown = !r.deleted
	r.mu.Unlock()
	r.requestStop(grace)
}

// teardown ends what is left of the pod's processes and removes its
// network and volumes; its logs and record stay until it is deleted.
func (r *podRun) teardown() {
	ctx, cancel := context.WithTimeout(r.p.ctx, 2*time.Minute)
	defer cancel()
	r.mu.Lock()
	netns, tried := r.att.NetNS, r.netTried
	r.mu.Unlock()
	if netns != "" {
		if err := r.p.opts.runner.Reap(ctx, netns); err != nil {
			r.log.Error(err, "ending the pod's remaining processes")
		}
	}
	if tried {
		r.netMu.Lock()
		defer r.netMu.Unlock()
		if err := r.p.opts.network.Teardown(ctx, r.podNetwork()); err != nil {
			r.log.Error(err, "removing the pod's network")
		}
	}
	if err := r.p.removePodFiles(ctx, r.dir); err != nil {
		r.log.Error(err, "removing the pod's volumes")
	}
}

// finish reports the final status; a deleted pod is then forgotten.
func (r *podRun) finish() {
	r.mu.Lock()
	now := r.now()
	for _, list := range [][]corev1.ContainerStatus{r.facts.InitContainers, r.facts.Containers} {
		for i := range list {
			endContainer(&list[i], now)
		}
	}
	r.facts.SandboxReady = false
	r.facts.Terminating = r.facts.Terminating || r.stopping
	r.finished = true
	deleted := r.deleted
	r.mu.Unlock()
	r.publish()
	if deleted {
		r.p.forget(r)
	}
}

// endContainer makes a container that is not terminated terminated: with
// its last termination when it waited for a restart, else as unknown.
func endContainer(s *corev1.ContainerStatus, now metav1.Time) {
	f := false
	s.Ready, s.Started = false, &f
	switch {
	case s.State.Terminated != nil:
	case s.LastTerminationState.Terminated != nil:
		s.State = corev1.ContainerState{Terminated: s.LastTerminationState.Terminated}
		s.LastTerminationState = corev1.ContainerState{}
	default:
		s.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137,
			Reason: ReasonContainerStatusUnknown, Message: "the pod stopped before the container ran", FinishedAt: now}}
	}
}

// update changes the facts under the lock.
func (r *podRun) update(fn func(*podFacts)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fn(&r.facts)
}

// container changes one container's status under the lock.
func (r *podRun) container(name string, init bool, fn func(*corev1.ContainerStatus)) {
	r.update(func(f *podFacts) {
		list := f.Containers
		if init {
			list = f.InitContainers
		}
		for i := range list {
			if list[i].Name == name {
				fn(&list[i])
			}
		}
	})
}

// publish computes the status, records it and then reports it when it
// changed: what was reported is always on disk first.
func (r *podRun) publish() {
	r.pubMu.Lock()
	defer r.pubMu.Unlock()
	r.mu.Lock()
	st := podStatus(r.pod, r.facts, r.now())
	changed := !apiequality.Semantic.DeepEqual(st, r.pod.Status)
	rec := r.recordLocked()
	r.mu.Unlock()
	if rec != nil {
		rec.Pod.Status = st
		if err := writeRecord(r.dir, *rec); err != nil {
			r.log.Error(err, "saving the pod's record")
		}
	}
	r.mu.Lock()
	r.pod.Status = st
	pod := r.pod.DeepCopy()
	r.mu.Unlock()
	if changed {
		if cb := r.p.notifier(); cb != nil {
			cb(pod)
		}
	}
}

// snapshot is the pod as last reported.
func (r *podRun) snapshot() *corev1.Pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pod.DeepCopy()
}

// updateMeta takes the labels, annotations and deletion fields of a newer
// version of the pod.
// A changed Multus annotation changes the running pod's secondary networks
// (annotationChanged).
func (r *podRun) updateMeta(pod *corev1.Pod) {
	r.mu.Lock()
	before := r.pod.Annotations[network.MultusNetworksAnnotation]
	r.pod.Labels, r.pod.Annotations = pod.Labels, pod.Annotations
	r.pod.DeletionTimestamp, r.pod.DeletionGracePeriodSeconds = pod.DeletionTimestamp, pod.DeletionGracePeriodSeconds
	r.mu.Unlock()
	r.annotationChanged(before)
}

func (r *podRun) logPath(container string) string {
	return filepath.Join(r.dir, "logs", container+".log")
}

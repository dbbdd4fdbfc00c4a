package handler

import (
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit/virt"
)

// StartObserver is told how long each stage of a guest's start took on this
// node, for a histogram per stage (metrics.StartStages) or a benchmark's
// breakdown. It is called from the reconcile, so it must not block.
type StartObserver interface {
	ObserveStart(stage string, took time.Duration)
}

// The stages of a start besides the chain's own steps, which are observed
// under their names (virt.StepPrepareStorage, virt.StepDefine, StepSaveState, ...).
const (
	// StageLauncherReady runs from the handler's first look at a Scheduled
	// VMI whose launcher pod exists to finding the launcher's ready file:
	// the launcher's start and its libvirtd's, as far as the handler waits
	// for them (zero when the launcher was ready first).
	StageLauncherReady = "launcher-ready"
	// StageConnect is reaching the launcher's libvirt and the pod's
	// namespaces and files, and building the guest's Machine.
	StageConnect = "connect"
	// StageReport runs from the chain's end (the domain started) to the
	// VMI's Running status written.
	StageReport = "report"
)

// StartStages are the names a StartObserver is told, in the order a start
// runs them, for a handler whose chain WithSteps did not edit.
func StartStages() []string {
	chain, err := startChain(virt.Step{Name: StepSaveState})
	if err != nil {
		panic(err) // the default chain has the step it is inserted after
	}
	return slices.Concat([]string{StageLauncherReady, StageConnect}, chain.Names(), []string{StageReport})
}

// startChain is the handler's start-up chain: virt.DefaultSteps with save,
// the step that keeps the plans on the node, once both plans are made.
func startChain(save virt.Step) (virt.Steps, error) {
	return virt.DefaultSteps().InsertAfter(virt.StepPlanNetwork, save)
}

// nopStarts is the StartObserver of a handler without WithStartObserver.
type nopStarts struct{}

func (nopStarts) ObserveStart(string, time.Duration) {}

// startWaits remembers, per VMI, when the handler first looked at it waiting
// for its launcher, for StageLauncherReady.
type startWaits struct {
	mu    sync.Mutex
	since map[types.NamespacedName]startWait
}

type startWait struct {
	uid   types.UID
	since time.Time
}

// look records now as the first look at the VMI key with uid, unless an
// earlier look at the same VMI was recorded.
func (w *startWaits) look(key types.NamespacedName, uid types.UID, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.since == nil {
		w.since = map[types.NamespacedName]startWait{}
	}
	if s, ok := w.since[key]; ok && s.uid == uid {
		return
	}
	w.since[key] = startWait{uid: uid, since: now}
}

// done returns how long the VMI has waited since its first look, and
// forgets it.
func (w *startWaits) done(key types.NamespacedName, uid types.UID, now time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	s, ok := w.since[key]
	delete(w.since, key)
	if !ok || s.uid != uid {
		return 0
	}
	return now.Sub(s.since)
}

// forget drops the VMI key (it is gone).
func (w *startWaits) forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.since, key)
}

// timedSteps is the chain with each step's run reported to the handler's
// StartObserver under the step's name.
func (r *Reconciler) timedSteps(steps virt.Steps) virt.Steps {
	return steps.Timed(r.clock, func(t virt.StepTiming) {
		if t.Err == nil {
			r.starts.ObserveStart(t.Step, t.Took)
		}
	})
}

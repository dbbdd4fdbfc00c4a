package events

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
)

// Recorder is the part of client-go's record.EventRecorder the reconcilers
// use; the manager's recorder and record.FakeRecorder satisfy it.
type Recorder interface {
	// Eventf records an event of eventtype (Normal, Warning) about object.
	Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any)
}

var _ Recorder = (record.EventRecorder)(nil)

// Discard returns a Recorder that drops every event.
func Discard() Recorder { return discard{} }

type discard struct{}

func (discard) Eventf(runtime.Object, string, string, string, ...any) {}

// Manager is the part of a controller-runtime manager that hands out
// recorders; ctrl.Manager satisfies it.
type Manager interface {
	// GetEventRecorderFor returns a recorder of core/v1 Events whose
	// source component is name.
	GetEventRecorderFor(name string) record.EventRecorder
}

// OrManager returns rec unless it is Discard's (nil counts as Discard's:
// the caller set no recorder); then it returns mgr's recorder for
// component, e.g. "virtualmachine-controller" or "virt-handler".
func OrManager(rec Recorder, mgr Manager, component string) Recorder {
	if _, none := rec.(discard); !none && rec != nil {
		return rec
	}
	// KubeVirt's clients read core/v1 Events, which this (deprecated in
	// controller-runtime) recorder writes; the new events API writes
	// events.k8s.io ones.
	return mgr.GetEventRecorderFor(component)
}

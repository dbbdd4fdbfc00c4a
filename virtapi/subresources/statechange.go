package subresources

import (
	"encoding/json"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	virtv1 "kubevirt.io/api/core/v1"
)

// patchOp is one JSON patch (RFC 6902) operation.
type patchOp struct {
	Op    string           `json:"op"`
	Path  string           `json:"path"`
	Value *json.RawMessage `json:"value,omitempty"`
}

// jsonPatch builds a JSON patch; values are marshalled as they are added,
// nil as null.
type jsonPatch struct {
	ops []patchOp
	err error
}

func (p *jsonPatch) add(op, path string, value any) *jsonPatch {
	o := patchOp{Op: op, Path: path}
	if op != "remove" {
		b, err := json.Marshal(value)
		if err != nil && p.err == nil {
			p.err = fmt.Errorf("%s %s: %w", op, path, err)
		}
		raw := json.RawMessage(b)
		o.Value = &raw
	}
	p.ops = append(p.ops, o)
	return p
}

func (p *jsonPatch) bytes() ([]byte, error) {
	if p.err != nil {
		return nil, p.err
	}
	return json.Marshal(p.ops)
}

// stateChangePatch is the status patch that queues changes on vm, as
// KubeVirt's virt-api writes it: guarded by a test of the current queue, so
// two concurrent requests cannot both win. A queue that is not empty only
// accepts a single Stop, which replaces it; anything else is "already
// underway" (ErrUnderway). A recorded start failure is cleared, so the
// requested start is not held back by the crash-loop backoff.
func stateChangePatch(vm *virtv1.VirtualMachine, changes ...virtv1.VirtualMachineStateChangeRequest) ([]byte, error) {
	p := &jsonPatch{}
	if equality.Semantic.DeepEqual(vm.Status, virtv1.VirtualMachineStatus{}) {
		p.add("add", "/status", virtv1.VirtualMachineStatus{StateChangeRequests: changes})
	} else {
		p.add("test", "/status/stateChangeRequests", vm.Status.StateChangeRequests)
		switch {
		case len(vm.Status.StateChangeRequests) == 0:
			p.add("add", "/status/stateChangeRequests", changes)
		case len(changes) == 1 && changes[0].Action == virtv1.StopRequest:
			p.add("replace", "/status/stateChangeRequests", changes)
		default:
			return nil, errUnderway
		}
		if vm.Status.StartFailure != nil {
			p.add("remove", "/status/startFailure", nil)
		}
	}
	return p.bytes()
}

// errUnderway is returned by stateChangePatch when earlier requests are
// still queued.
var errUnderway = errors.New(msgUnderway)

// runStrategyPatch switches vm between Always (running) and Halted in the
// field the user chose: spec.runStrategy, or the deprecated spec.running.
// A VM with neither gets spec.runStrategy.
func runStrategyPatch(vm *virtv1.VirtualMachine, running bool) ([]byte, error) {
	strategy := virtv1.RunStrategyHalted
	if running {
		strategy = virtv1.RunStrategyAlways
	}
	p := &jsonPatch{}
	switch {
	case vm.Spec.RunStrategy != nil:
		p.add("test", "/spec/runStrategy", vm.Spec.RunStrategy).add("replace", "/spec/runStrategy", strategy)
	case vm.Spec.Running != nil:
		p.add("test", "/spec/running", vm.Spec.Running).add("replace", "/spec/running", running)
	default:
		p.add("test", "/spec/runStrategy", nil).add("add", "/spec/runStrategy", strategy)
	}
	return p.bytes()
}

// gracePeriodPatch sets a VMI's terminationGracePeriodSeconds, guarded by a
// test of the value it had.
func gracePeriodPatch(vmi *virtv1.VirtualMachineInstance, seconds int64) ([]byte, error) {
	return (&jsonPatch{}).
		add("test", "/spec/terminationGracePeriodSeconds", vmi.Spec.TerminationGracePeriodSeconds).
		add("add", "/spec/terminationGracePeriodSeconds", seconds).bytes()
}

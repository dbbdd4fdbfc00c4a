// Package fake is an in-memory storage.Interface for callers' unit tests:
// it plans with storage.PreviewPlan (no file is read), refusing what the
// real planner refuses without reading files, records every call,
// remembers which plans are prepared, and fails on request. It passes the
// contract suite virt/storage/storagetest, as the real Manager does.
//
// It does not model files: Prepare creates nothing and Release removes
// nothing, formats and capacities are PreviewPlan's guesses, and no size or
// format check happens. For those, run storage.New with a temporary Layout
// (see virt/storage's tests).
package fake

import (
	"context"
	"fmt"
	"slices"
	"sync"

	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/storage"
)

// Operation names, for Call.Op and FailNext.
const (
	OpPlan    = "plan"
	OpPrepare = "prepare"
	OpRelease = "release"
)

// Call is one recorded call.
type Call struct {
	Op string
	// VMI is namespace/name (empty for Release).
	VMI  string
	Plan storage.Plan
}

// Storage is the fake. Its function fields, when set, replace the default
// behaviour of a method (after the call is recorded and FailNext is
// consumed).
type Storage struct {
	PlanFunc    func(ctx context.Context, vmi *virtv1.VirtualMachineInstance, pod storage.Pod) (storage.Plan, error)
	PrepareFunc func(ctx context.Context, vmi *virtv1.VirtualMachineInstance, pod storage.Pod, plan storage.Plan) error
	ReleaseFunc func(ctx context.Context, plan storage.Plan) error

	mu       sync.Mutex
	calls    []Call
	failNext map[string][]error
	prepared map[string]storage.DiskPlan // by image path
}

var _ storage.Interface = (*Storage)(nil)

// New returns an empty fake.
func New() *Storage {
	return &Storage{failNext: map[string][]error{}, prepared: map[string]storage.DiskPlan{}}
}

// FailNext makes the next call of op fail with err (queued per op).
func (s *Storage) FailNext(op string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failNext[op] = append(s.failNext[op], err)
}

// Calls returns the calls so far, in order.
func (s *Storage) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// PreparedImages returns the paths of the images prepared and not
// released, sorted: the fake's counterpart of the files in a pod.
func (s *Storage) PreparedImages() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.prepared))
	for p := range s.prepared {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// Prepared reports whether an image at path is prepared and not released.
func (s *Storage) Prepared(path string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.prepared[path]
	return ok
}

func (s *Storage) record(op, vmi string, plan storage.Plan) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, Call{Op: op, VMI: vmi, Plan: plan})
	if q := s.failNext[op]; len(q) > 0 {
		s.failNext[op] = q[1:]
		return q[0]
	}
	return nil
}

func key(vmi *virtv1.VirtualMachineInstance) string { return vmi.Namespace + "/" + vmi.Name }

// Plan returns storage.PreviewPlan(vmi) for the volumes vmi's disks use,
// refusing what the real planner refuses without reading files (see
// plan), or PlanFunc's answer.
func (s *Storage) Plan(ctx context.Context, vmi *virtv1.VirtualMachineInstance, pod storage.Pod) (storage.Plan, error) {
	if err := s.record(OpPlan, key(vmi), nil); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.PlanFunc != nil {
		return s.PlanFunc(ctx, vmi, pod)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.plan(vmi, pod)
}

// Prepare marks every image of plan prepared.
func (s *Storage) Prepare(ctx context.Context, vmi *virtv1.VirtualMachineInstance, pod storage.Pod, plan storage.Plan) error {
	if err := s.record(OpPrepare, key(vmi), plan); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.PrepareFunc != nil {
		if err := s.PrepareFunc(ctx, vmi, pod, plan); err != nil {
			return err
		}
	}
	// As the real Prepare, all or nothing: an image of a kind it cannot
	// make fails before anything is marked.
	for n, p := range plan {
		if p.Create && !makes(p.Kind) {
			return &storage.VolumeError{Volume: n, Path: p.Path, Detail: "preparing " + string(p.Kind),
				Err: fmt.Errorf("the plan asks to create an image of unknown kind %q", p.Kind)}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range plan {
		s.prepared[p.Path] = p
	}
	return nil
}

// makes reports whether Prepare can create an image of kind k.
func makes(k storage.Kind) bool {
	switch k {
	case storage.KindPersistentVolumeClaim, storage.KindDataVolume, storage.KindHostDisk, storage.KindEmptyDisk,
		storage.KindEphemeral, storage.KindContainerDisk, storage.KindCloudInitNoCloud, storage.KindCloudInitConfigDrive,
		storage.KindConfigMap, storage.KindSecret, storage.KindServiceAccount, storage.KindDownwardAPI:
		return true
	}
	return false
}

// Release forgets the Discardable images of plan.
func (s *Storage) Release(ctx context.Context, plan storage.Plan) error {
	if err := s.record(OpRelease, "", plan); err != nil {
		return err
	}
	if s.ReleaseFunc != nil {
		if err := s.ReleaseFunc(ctx, plan); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range plan {
		if p.Discardable() {
			delete(s.prepared, p.Path)
		}
	}
	return nil
}

package virt

import (
	"errors"
	"fmt"
	"slices"
)

// Sentinel errors of chain edits; branch on them with errors.Is.
var (
	// ErrNoStep marks an edit that names a step the chain does not have.
	ErrNoStep = errors.New("no such step")
	// ErrDuplicateStep marks a chain in which two steps share a name.
	ErrDuplicateStep = errors.New("step name used twice")
)

// Steps is a start-up chain, edited by step name. Each edit returns a new
// chain and leaves its receiver as it was, so edits compose:
//
//	steps, err := virt.DefaultSteps().InsertAfter(virt.StepPlanNetwork, audit)
//	steps, err = steps.Replace(virt.StepStartDHCP, myDHCP)
//	steps, err = steps.Remove(virt.StepSetupNetwork)
//
// An edit that names a missing step fails with ErrNoStep, and one that would
// make a name appear twice with ErrDuplicateStep, so a chain never holds a
// step an editor did not mean.
type Steps []Step

// Names are the chain's step names, in order.
func (s Steps) Names() []string {
	out := make([]string, len(s))
	for i, st := range s {
		out[i] = st.Name
	}
	return out
}

// Index is the position of the step called name, or -1.
func (s Steps) Index(name string) int {
	return slices.IndexFunc(s, func(st Step) bool { return st.Name == name })
}

// Get returns the step called name.
func (s Steps) Get(name string) (Step, bool) {
	if i := s.Index(name); i >= 0 {
		return s[i], true
	}
	return Step{}, false
}

// InsertAfter returns the chain with steps inserted right after the step
// called name.
func (s Steps) InsertAfter(name string, steps ...Step) (Steps, error) {
	i := s.Index(name)
	if i < 0 {
		return nil, fmt.Errorf("virt: insert after step %q: %w", name, ErrNoStep)
	}
	return s.insert(i+1, steps)
}

// InsertBefore returns the chain with steps inserted right before the step
// called name.
func (s Steps) InsertBefore(name string, steps ...Step) (Steps, error) {
	i := s.Index(name)
	if i < 0 {
		return nil, fmt.Errorf("virt: insert before step %q: %w", name, ErrNoStep)
	}
	return s.insert(i, steps)
}

// Append returns the chain with steps added at its end.
func (s Steps) Append(steps ...Step) (Steps, error) { return s.insert(len(s), steps) }

// Replace returns the chain with the step called name replaced by step
// (which may carry another name).
func (s Steps) Replace(name string, step Step) (Steps, error) {
	i := s.Index(name)
	if i < 0 {
		return nil, fmt.Errorf("virt: replace step %q: %w", name, ErrNoStep)
	}
	out := slices.Clone(s)
	out[i] = step
	return out, out.check()
}

// Edit returns the chain with the step called name changed by edit, as
// replacing it with edit's result: for example a step whose Run is changed
// but whose Undo stays.
func (s Steps) Edit(name string, edit func(Step) Step) (Steps, error) {
	st, ok := s.Get(name)
	if !ok {
		return nil, fmt.Errorf("virt: edit step %q: %w", name, ErrNoStep)
	}
	return s.Replace(name, edit(st))
}

// Remove returns the chain without the step called name.
func (s Steps) Remove(name string) (Steps, error) {
	i := s.Index(name)
	if i < 0 {
		return nil, fmt.Errorf("virt: remove step %q: %w", name, ErrNoStep)
	}
	return slices.Delete(slices.Clone(s), i, i+1), nil
}

func (s Steps) insert(at int, steps []Step) (Steps, error) {
	out := slices.Insert(slices.Clone(s), at, steps...)
	return out, out.check()
}

// check refuses a chain with an unnamed step or a name used twice.
func (s Steps) check() error {
	seen := map[string]bool{}
	for i, st := range s {
		if st.Name == "" {
			return fmt.Errorf("virt: step %d has no name", i)
		}
		if seen[st.Name] {
			return fmt.Errorf("virt: step %q: %w", st.Name, ErrDuplicateStep)
		}
		seen[st.Name] = true
	}
	return nil
}

package virt_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gotest.tools/v3/assert"

	"github.com/virtkit/virtkit/virt"
	domainfake "github.com/virtkit/virtkit/virt/domain/fake"
)

func named(name string) virt.Step {
	return virt.Step{Name: name, Run: func(context.Context, *virt.Machine) error { return nil }}
}

func TestStepsEdits(t *testing.T) {
	base := virt.Steps{named("a"), named("b"), named("c")}
	for _, tc := range []struct {
		name    string
		edit    func(virt.Steps) (virt.Steps, error)
		want    []string
		wantErr error
	}{
		{name: "insert after", edit: func(s virt.Steps) (virt.Steps, error) { return s.InsertAfter("b", named("x"), named("y")) }, want: []string{"a", "b", "x", "y", "c"}},
		{name: "insert after the last", edit: func(s virt.Steps) (virt.Steps, error) { return s.InsertAfter("c", named("x")) }, want: []string{"a", "b", "c", "x"}},
		{name: "insert before the first", edit: func(s virt.Steps) (virt.Steps, error) { return s.InsertBefore("a", named("x")) }, want: []string{"x", "a", "b", "c"}},
		{name: "append", edit: func(s virt.Steps) (virt.Steps, error) { return s.Append(named("x")) }, want: []string{"a", "b", "c", "x"}},
		{name: "replace", edit: func(s virt.Steps) (virt.Steps, error) { return s.Replace("b", named("x")) }, want: []string{"a", "x", "c"}},
		{name: "replace keeping the name", edit: func(s virt.Steps) (virt.Steps, error) { return s.Replace("b", named("b")) }, want: []string{"a", "b", "c"}},
		{name: "remove", edit: func(s virt.Steps) (virt.Steps, error) { return s.Remove("a") }, want: []string{"b", "c"}},
		{name: "insert after a missing step", edit: func(s virt.Steps) (virt.Steps, error) { return s.InsertAfter("z", named("x")) }, wantErr: virt.ErrNoStep},
		{name: "insert before a missing step", edit: func(s virt.Steps) (virt.Steps, error) { return s.InsertBefore("z", named("x")) }, wantErr: virt.ErrNoStep},
		{name: "replace a missing step", edit: func(s virt.Steps) (virt.Steps, error) { return s.Replace("z", named("x")) }, wantErr: virt.ErrNoStep},
		{name: "remove a missing step", edit: func(s virt.Steps) (virt.Steps, error) { return s.Remove("z") }, wantErr: virt.ErrNoStep},
		{name: "edit a missing step", edit: func(s virt.Steps) (virt.Steps, error) { return s.Edit("z", func(s virt.Step) virt.Step { return s }) }, wantErr: virt.ErrNoStep},
		{name: "insert a name twice", edit: func(s virt.Steps) (virt.Steps, error) { return s.InsertAfter("a", named("c")) }, wantErr: virt.ErrDuplicateStep},
		{name: "replace onto another's name", edit: func(s virt.Steps) (virt.Steps, error) { return s.Replace("a", named("b")) }, wantErr: virt.ErrDuplicateStep},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.edit(base)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr == nil {
				if diff := cmp.Diff(tc.want, got.Names()); diff != "" {
					t.Errorf("chain (-want +got):\n%s", diff)
				}
			}
			if diff := cmp.Diff([]string{"a", "b", "c"}, base.Names()); diff != "" {
				t.Errorf("the edit changed its receiver (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStepsEditKeepsUndo(t *testing.T) {
	steps, err := virt.DefaultSteps().Edit(virt.StepDefine, func(s virt.Step) virt.Step {
		s.Run = func(context.Context, *virt.Machine) error { return nil }
		return s
	})
	assert.NilError(t, err)
	s, ok := steps.Get(virt.StepDefine)
	assert.Assert(t, ok)
	assert.Assert(t, s.Undo != nil, "the edited step keeps its undo")
	assert.NilError(t, s.Run(context.Background(), nil))
}

func TestNewRefusesABrokenChain(t *testing.T) {
	for name, steps := range map[string]virt.Steps{
		"a name twice": {named("a"), named("a")},
		"no name":      {named("a"), {}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := virt.New(tinyVMI(), virt.WithDomainManager(domainfake.New()), virt.WithSteps(steps))
			assert.ErrorContains(t, err, "start-up chain")
		})
	}
}

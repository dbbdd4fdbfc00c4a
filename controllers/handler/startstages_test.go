package handler_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"gotest.tools/v3/assert"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/controllers/handler"
	"github.com/virtkit/virtkit/virt"
)

// stages records what a handler observes, in order.
type stages struct {
	mu  sync.Mutex
	got []string
	by  map[string]time.Duration
}

func (s *stages) ObserveStart(stage string, took time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, stage)
	if s.by == nil {
		s.by = map[string]time.Duration{}
	}
	s.by[stage] += took
}

func TestStartStagesAreObserved(t *testing.T) {
	n := newFakeNode(t)
	obs := &stages{}
	n.extra = append(n.extra, handler.WithStartObserver(obs))
	n.r = n.handler()

	vmi := scheduledVMI("timed")
	assert.NilError(t, n.c.Create(context.Background(), vmi))
	assert.NilError(t, n.c.Status().Update(context.Background(), vmi))
	l := n.launcherPod(vmi)
	n.reconcile("timed") // the launcher is not ready: the wait begins
	assert.Equal(t, len(obs.got), 0, "a start that did not happen was observed: %v", obs.got)

	n.clock.Step(3 * time.Second)
	assert.NilError(t, os.MkdirAll(filepath.Dir(l.LibvirtSocket()), 0o755))
	n.listenLibvirt(l)
	assert.NilError(t, os.WriteFile(l.ReadyFile(), []byte(l.LibvirtURI()+"\n"), 0o644))
	n.reconcile("timed")
	assert.Equal(t, n.vmi("timed").Status.Phase, virtv1.Running)

	want := []string{
		virt.StepPlanStorage, virt.StepPrepareStorage, virt.StepPlanNetwork, handler.StepSaveState,
		virt.StepSetupNetwork, virt.StepStartDHCP, virt.StepDefine, virt.StepStart,
		handler.StageLauncherReady, handler.StageConnect, handler.StageReport,
	}
	if diff := cmp.Diff(want, obs.got); diff != "" {
		t.Errorf("stages observed (-want +got):\n%s", diff)
	}
	inOrder := []string{
		handler.StageLauncherReady, handler.StageConnect,
		virt.StepPlanStorage, virt.StepPrepareStorage, virt.StepPlanNetwork, handler.StepSaveState,
		virt.StepSetupNetwork, virt.StepStartDHCP, virt.StepDefine, virt.StepStart,
		handler.StageReport,
	}
	if diff := cmp.Diff(inOrder, handler.StartStages()); diff != "" {
		t.Errorf("StartStages (-want +got):\n%s", diff)
	}
	assert.Equal(t, obs.by[handler.StageLauncherReady], 3*time.Second, "the wait for the launcher runs from the first look")

	// Reported once: a later reconcile of the running VMI adds nothing.
	n.reconcile("timed")
	assert.Equal(t, len(obs.got), len(want))
}

package node

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
)

const sigterm = syscall.SIGTERM

// Termination messages are cut as the kubelet cuts them.
const (
	maxTerminationMessage = 4096
	fallbackLogLines      = 80
	fallbackLogBytes      = 2048
)

// runContainers runs the init containers one after the other, then the
// containers side by side, restarting them as the restart policy says,
// until all ended for good or the pod stops.
func (r *podRun) runContainers(ctx context.Context) {
	r.mu.Lock()
	spec := r.pod.Spec.DeepCopy()
	r.mu.Unlock()
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		for {
			code, ran := r.runContainer(ctx, c, true)
			if !ran {
				return
			}
			if code == 0 {
				break
			}
			if spec.RestartPolicy == corev1.RestartPolicyNever || r.isStopping() {
				return
			}
			if !r.restartWait(c, true) {
				return
			}
		}
	}
	if len(spec.InitContainers) > 0 {
		r.update(func(f *podFacts) {
			for i := range f.Containers {
				f.Containers[i].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
			}
		})
		r.publish()
	}
	var wg sync.WaitGroup
	for i := range spec.Containers {
		c := &spec.Containers[i]
		wg.Go(func() {
			for {
				code, ran := r.runContainer(ctx, c, false)
				if !ran || r.isStopping() || !restarts(spec.RestartPolicy, code) {
					return
				}
				if !r.restartWait(c, false) {
					return
				}
			}
		})
	}
	wg.Wait()
}

// restartWait waits the container's back-off before it is started again;
// false when the pod stops meanwhile.
func (r *podRun) restartWait(c *corev1.Container, init bool) bool {
	var wait time.Duration
	r.container(c.Name, init, func(s *corev1.ContainerStatus) {
		wait = r.p.opts.backoff << min(s.RestartCount, 16)
		wait = min(wait, r.p.opts.maxBackoff)
		s.LastTerminationState = s.State
		s.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
			Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", wait, c.Name, r.name, r.namespace, r.uid)}}
	})
	r.publish()
	if !r.sleep(wait) {
		return false
	}
	r.container(c.Name, init, func(s *corev1.ContainerStatus) { s.RestartCount++ })
	return true
}

// runContainer runs the container once: it returns its exit code, and
// false when it was not started because the pod stops.
func (r *podRun) runContainer(ctx context.Context, c *corev1.Container, init bool) (int32, bool) {
	if r.isStopping() {
		return 0, false
	}
	spec, err := r.processSpec(c)
	var proc Process
	if err == nil {
		proc, err = r.p.opts.runner.Start(ctx, spec)
		spec.Log.Close()
	}
	started := r.now()
	if err != nil {
		r.log.Info("container did not start", "container", c.Name, "error", err.Error())
		r.container(c.Name, init, func(s *corev1.ContainerStatus) {
			s.Ready, s.Started = false, new(false)
			s.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 128,
				Reason: ReasonStartError, Message: err.Error(), StartedAt: started, FinishedAt: started}}
		})
		r.publish()
		return 128, true
	}
	id := "virtkit-local://" + strconv.Itoa(proc.Ref().PID)
	r.mu.Lock()
	r.procs[c.Name] = proc
	if r.stopping { // stopped while it started: it gets its SIGTERM too
		_ = proc.Signal(sigterm)
	}
	r.mu.Unlock()
	r.container(c.Name, init, func(s *corev1.ContainerStatus) {
		s.ContainerID, s.Started = id, new(true)
		s.Ready = !init && c.ReadinessProbe == nil
		s.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}
	})
	r.publish()
	r.log.Info("container started", "container", c.Name, "pid", proc.Ref().PID)

	probeCtx, stopProbes := context.WithCancel(ctx)
	var probes sync.WaitGroup
	if !init {
		r.startProbes(probeCtx, &probes, c, proc)
	}
	es := proc.Wait()
	stopProbes()
	probes.Wait()
	// What the process left in its group and mount namespace goes with it.
	if err := r.p.opts.runner.Kill(ctx, proc.Ref()); err != nil {
		r.log.Error(err, "ending the container's remaining processes", "container", c.Name)
	}
	r.mu.Lock()
	delete(r.procs, c.Name)
	r.mu.Unlock()

	reason := "Completed"
	if es.Code != 0 {
		reason = "Error"
	}
	msg := r.terminationMessage(c, es.Code)
	finished := r.now()
	r.container(c.Name, init, func(s *corev1.ContainerStatus) {
		s.Ready, s.Started = false, new(false)
		s.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: int32(es.Code),
			Signal: int32(es.Signal), Reason: reason, Message: msg, StartedAt: started, FinishedAt: finished, ContainerID: id}}
	})
	r.publish()
	r.log.Info("container ended", "container", c.Name, "exitCode", es.Code)
	return int32(es.Code), true
}

func (r *podRun) containerDir(name string) string { return filepath.Join(r.dir, "containers", name) }

// terminationLogPath is the host file behind the container's
// terminationMessagePath.
func (r *podRun) terminationLogPath(name string) string {
	return filepath.Join(r.containerDir(name), "termination-log")
}

// terminationMessage is what the container wrote to its termination
// message file, or with FallbackToLogsOnError and a failure, the end of
// its log.
func (r *podRun) terminationMessage(c *corev1.Container, code int) string {
	b, _ := readHead(r.terminationLogPath(c.Name), maxTerminationMessage)
	if len(bytes.TrimSpace(b)) == 0 && code != 0 && c.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError {
		b = logTail(r.logPath(c.Name), fallbackLogLines, fallbackLogBytes)
	}
	return string(b)
}

func readHead(path string, n int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, n)
	k, _ := f.Read(b)
	return b[:k], nil
}

// logTail is the last lines of a log, at most maxBytes.
func logTail(path string, lines, maxBytes int) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil
	}
	off := max(st.Size()-int64(maxBytes), 0)
	b := make([]byte, st.Size()-off)
	n, _ := f.ReadAt(b, off)
	b = bytes.TrimRight(b[:n], "\n")
	if i := len(b); i > 0 {
		parts := bytes.Split(b, []byte("\n"))
		if len(parts) > lines {
			parts = parts[len(parts)-lines:]
		}
		b = bytes.Join(parts, []byte("\n"))
	}
	return b
}

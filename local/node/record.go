package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podRecord is what the node keeps of a pod in PODDIR/pod.json, so that a
// restarted node can clean up after it and report it.
type podRecord struct {
	// Pod is the pod as last reported, status included.
	Pod *corev1.Pod `json:"pod"`
	// Processes are the running containers' processes.
	Processes map[string]ProcessRef `json:"processes,omitempty"`
	// NetNS is the pod's network namespace file; Network says that a
	// network set-up was started (so a tear-down is owed).
	NetNS   string `json:"netns,omitempty"`
	Network bool   `json:"network,omitempty"`
	// Finished: the pod ended and was torn down.
	Finished bool `json:"finished,omitempty"`
}

const recordFile = "pod.json"

// save writes the pod's record, atomically.
func (r *podRun) save() {
	r.mu.Lock()
	rec := r.recordLocked()
	r.mu.Unlock()
	if rec == nil {
		return
	}
	if err := writeRecord(r.dir, *rec); err != nil {
		r.log.Error(err, "saving the pod's record")
	}
}

// recordLocked is the pod's record; nil once the pod is forgotten.
func (r *podRun) recordLocked() *podRecord {
	if r.gone {
		return nil
	}
	rec := &podRecord{Pod: r.pod.DeepCopy(), NetNS: r.att.NetNS, Network: r.netTried, Finished: r.finished,
		Processes: map[string]ProcessRef{}}
	for name, p := range r.procs {
		rec.Processes[name] = p.Ref()
	}
	return rec
}

func writeRecord(dir string, rec podRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp := filepath.Join(dir, recordFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, recordFile))
}

func readRecord(dir string) (podRecord, error) {
	var rec podRecord
	b, err := os.ReadFile(filepath.Join(dir, recordFile))
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, fmt.Errorf("%s: %w", filepath.Join(dir, recordFile), err)
	}
	if rec.Pod == nil {
		return rec, fmt.Errorf("%s: no pod", filepath.Join(dir, recordFile))
	}
	return rec, nil
}

// removePodFiles removes what a torn-down pod no longer needs (volumes,
// CSI volumes unpublished first, and per-container files); its logs and
// record stay.
func (p *Provider) removePodFiles(ctx context.Context, dir string) error {
	errs := []error{p.unpublishCSI(ctx, dir)}
	for _, sub := range []string{"volumes", "containers"} {
		if err := removeAllUnmounted(filepath.Join(dir, sub)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// recover finds the pods a previous run of the node left in StateDir,
// cleans up after them and keeps them, finished, to be reported.
func (p *Provider) recover(ctx context.Context) error {
	ents, err := os.ReadDir(p.cfg.PodsDir())
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var errs []error
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(p.cfg.PodsDir(), e.Name())
		rec, err := readRecord(dir)
		if err != nil {
			// Died before its first record: nothing ran; a network may
			// have been started.
			p.log.Info("removing a pod folder without a record", "dir", dir, "error", err.Error())
			errs = append(errs, p.opts.network.Teardown(ctx, PodNetwork{ID: e.Name(), Dir: dir}), p.unpublishCSI(ctx, dir), removeAllUnmounted(dir))
			continue
		}
		pod := rec.Pod
		for _, ref := range rec.Processes {
			errs = append(errs, p.opts.runner.Kill(ctx, ref))
		}
		if rec.NetNS != "" {
			errs = append(errs, p.opts.runner.Reap(ctx, rec.NetNS))
		}
		if rec.Network {
			errs = append(errs, p.opts.network.Teardown(ctx, PodNetwork{ID: string(pod.UID), Namespace: pod.Namespace, Name: pod.Name, Dir: dir}))
		}
		errs = append(errs, p.removePodFiles(ctx, dir))

		r := newPodRun(p, pod)
		r.pod.Status = pod.Status
		r.facts = factsOf(pod.Status)
		if !rec.Finished {
			lost(&r.facts, r.now())
		}
		r.finished = true
		close(r.done)
		r.pod.Status = podStatus(r.pod, r.facts, r.now())
		if err := writeRecord(dir, podRecord{Pod: r.pod, Finished: true}); err != nil {
			errs = append(errs, err)
		}
		p.pods[r.key] = r
		p.recovered = append(p.recovered, r)
		p.log.Info("recovered a pod from an earlier run", "pod", r.key, "phase", r.pod.Status.Phase, "reason", r.pod.Status.Reason)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("node: cleaning up after an earlier run: %w", err)
	}
	return nil
}

// factsOf reads the facts back from a reported status.
func factsOf(st corev1.PodStatus) podFacts {
	f := podFacts{InitContainers: st.InitContainerStatuses, Containers: st.ContainerStatuses,
		HostIP: st.HostIP, StartTime: st.StartTime}
	if st.Phase == corev1.PodSucceeded || st.Phase == corev1.PodFailed {
		f.Phase, f.Reason, f.Message = st.Phase, st.Reason, st.Message
	}
	for _, ip := range st.PodIPs {
		f.PodIPs = append(f.PodIPs, ip.IP)
	}
	return f
}

// lost marks a pod whose processes ended with the node's previous run:
// Failed, each container that had not ended terminated as unknown.
func lost(f *podFacts, now metav1.Time) {
	for _, list := range [][]corev1.ContainerStatus{f.InitContainers, f.Containers} {
		for i := range list {
			s := &list[i]
			if s.State.Terminated != nil {
				continue
			}
			t := &corev1.ContainerStateTerminated{ExitCode: 137, Reason: ReasonContainerStatusUnknown,
				Message: "the process was gone when the local node restarted", FinishedAt: now, ContainerID: s.ContainerID}
			if s.State.Running != nil {
				t.StartedAt = s.State.Running.StartedAt
			}
			no := false
			s.State, s.Ready, s.Started = corev1.ContainerState{Terminated: t}, false, &no
		}
	}
	f.Phase, f.Reason = corev1.PodFailed, ReasonNodeRestarted
	f.Message = "the local node restarted and the pod's processes had ended with it"
	f.SandboxReady = false
}

package node

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func waiting(name, reason string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
}

func running(name string, ready bool) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, Ready: ready, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
}

func exited(name string, code int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}
}

func backingOff(name string, code int32) corev1.ContainerStatus {
	s := waiting(name, "CrashLoopBackOff")
	s.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}
	return s
}

func TestPodPhase(t *testing.T) {
	list := func(s ...corev1.ContainerStatus) []corev1.ContainerStatus { return s }
	for _, tc := range []struct {
		name        string
		policy      corev1.RestartPolicy
		init, main  []corev1.ContainerStatus
		terminating bool
		want        corev1.PodPhase
	}{
		{"creating", corev1.RestartPolicyNever, nil, list(waiting("a", "ContainerCreating")), false, corev1.PodPending},
		{"image missing", corev1.RestartPolicyNever, nil, list(waiting("a", "ErrImagePull")), false, corev1.PodPending},
		{"one runs, one waits", corev1.RestartPolicyNever, nil, list(running("a", true), waiting("b", "ContainerCreating")), false, corev1.PodPending},
		{"running", corev1.RestartPolicyNever, nil, list(running("a", false)), false, corev1.PodRunning},
		{"one ended, one runs", corev1.RestartPolicyNever, nil, list(exited("a", 1), running("b", true)), false, corev1.PodRunning},
		{"succeeded", corev1.RestartPolicyNever, nil, list(exited("a", 0), exited("b", 0)), false, corev1.PodSucceeded},
		{"failed", corev1.RestartPolicyNever, nil, list(exited("a", 0), exited("b", 2)), false, corev1.PodFailed},
		{"always: restarting", corev1.RestartPolicyAlways, nil, list(backingOff("a", 0)), false, corev1.PodRunning},
		{"always: all ended", corev1.RestartPolicyAlways, nil, list(exited("a", 0)), false, corev1.PodRunning},
		{"always, deleted: all ended", corev1.RestartPolicyAlways, nil, list(exited("a", 0)), true, corev1.PodSucceeded},
		{"always, deleted: killed", corev1.RestartPolicyAlways, nil, list(exited("a", 143)), true, corev1.PodFailed},
		{"on failure: failed one restarts", corev1.RestartPolicyOnFailure, nil, list(exited("a", 1)), false, corev1.PodRunning},
		{"on failure: succeeded", corev1.RestartPolicyOnFailure, nil, list(exited("a", 0)), false, corev1.PodSucceeded},
		{"init runs", corev1.RestartPolicyNever, list(running("i", false)), list(waiting("a", "PodInitializing")), false, corev1.PodPending},
		{"init failed, never", corev1.RestartPolicyNever, list(exited("i", 1)), list(waiting("a", "PodInitializing")), false, corev1.PodFailed},
		{"init failed, always", corev1.RestartPolicyAlways, list(exited("i", 1)), list(waiting("a", "PodInitializing")), false, corev1.PodPending},
		{"init done", corev1.RestartPolicyNever, list(exited("i", 0)), list(running("a", true)), false, corev1.PodRunning},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := podPhase(&corev1.PodSpec{RestartPolicy: tc.policy}, podFacts{InitContainers: tc.init, Containers: tc.main, Terminating: tc.terminating})
			if got != tc.want {
				t.Errorf("podPhase = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestPodStatus(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	scheduled := corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: t0}
	cond := func(typ corev1.PodConditionType, ok bool, at metav1.Time, reason, msg string) corev1.PodCondition {
		c := corev1.PodCondition{Type: typ, Status: corev1.ConditionFalse, LastTransitionTime: at, Reason: reason, Message: msg}
		if ok {
			c.Status = corev1.ConditionTrue
		}
		return c
	}
	pod := func(gates []string, conds ...corev1.PodCondition) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever}}
		for _, g := range gates {
			p.Spec.ReadinessGates = append(p.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: corev1.PodConditionType(g)})
		}
		p.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBurstable, Conditions: conds}
		return p
	}
	start := t0
	for _, tc := range []struct {
		name  string
		pod   *corev1.Pod
		facts podFacts
		want  corev1.PodStatus
	}{{
		name:  "creating: only the scheduler's condition is kept, the rest are new",
		pod:   pod(nil, scheduled),
		facts: podFacts{Containers: []corev1.ContainerStatus{waiting("a", "ContainerCreating")}, HostIP: "192.0.2.1", StartTime: &start},
		want: corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBurstable, HostIP: "192.0.2.1",
			HostIPs: []corev1.HostIP{{IP: "192.0.2.1"}}, StartTime: &start,
			ContainerStatuses: []corev1.ContainerStatus{waiting("a", "ContainerCreating")},
			Conditions: []corev1.PodCondition{scheduled,
				cond(corev1.PodReadyToStartContainers, false, t1, "", ""),
				cond(corev1.PodInitialized, true, t1, "", ""),
				cond(corev1.ContainersReady, false, t1, "ContainersNotReady", "containers with unready status: [a]"),
				cond(corev1.PodReady, false, t1, "ContainersNotReady", "containers with unready status: [a]"),
			}},
	}, {
		name: "running and ready: unchanged conditions keep their times",
		pod: pod(nil, scheduled, cond(corev1.PodReadyToStartContainers, true, t0, "", ""),
			cond(corev1.PodInitialized, true, t0, "", "")),
		facts: podFacts{Containers: []corev1.ContainerStatus{running("a", true)}, SandboxReady: true, PodIPs: []string{"10.0.0.2"}},
		want: corev1.PodStatus{Phase: corev1.PodRunning, QOSClass: corev1.PodQOSBurstable, PodIP: "10.0.0.2",
			PodIPs:            []corev1.PodIP{{IP: "10.0.0.2"}},
			ContainerStatuses: []corev1.ContainerStatus{running("a", true)},
			Conditions: []corev1.PodCondition{scheduled,
				cond(corev1.PodReadyToStartContainers, true, t0, "", ""),
				cond(corev1.PodInitialized, true, t0, "", ""),
				cond(corev1.ContainersReady, true, t1, "", ""),
				cond(corev1.PodReady, true, t1, "", ""),
			}},
	}, {
		name:  "ready containers but a readiness gate is not True",
		pod:   pod([]string{"example.com/gate"}, scheduled),
		facts: podFacts{Containers: []corev1.ContainerStatus{running("a", true)}, SandboxReady: true},
		want: corev1.PodStatus{Phase: corev1.PodRunning, QOSClass: corev1.PodQOSBurstable,
			ContainerStatuses: []corev1.ContainerStatus{running("a", true)},
			Conditions: []corev1.PodCondition{scheduled,
				cond(corev1.PodReadyToStartContainers, true, t1, "", ""),
				cond(corev1.PodInitialized, true, t1, "", ""),
				cond(corev1.ContainersReady, true, t1, "", ""),
				cond(corev1.PodReady, false, t1, "ReadinessGatesNotReady", `corresponding condition of pod readiness gate "example.com/gate" does not exist or is not True`),
			}},
	}, {
		name:  "failed: not ready, completed",
		pod:   pod(nil, scheduled),
		facts: podFacts{Containers: []corev1.ContainerStatus{exited("a", 3)}, SandboxReady: true},
		want: corev1.PodStatus{Phase: corev1.PodFailed, QOSClass: corev1.PodQOSBurstable,
			ContainerStatuses: []corev1.ContainerStatus{exited("a", 3)},
			Conditions: []corev1.PodCondition{scheduled,
				cond(corev1.PodReadyToStartContainers, false, t1, "", ""),
				cond(corev1.PodInitialized, true, t1, "", ""),
				cond(corev1.ContainersReady, false, t1, "PodCompleted", ""),
				cond(corev1.PodReady, false, t1, "PodCompleted", ""),
			}},
	}, {
		name: "a terminal phase is final",
		pod: func() *corev1.Pod {
			p := pod(nil)
			p.Status.Phase, p.Status.Reason = corev1.PodSucceeded, ""
			return p
		}(),
		facts: podFacts{Containers: []corev1.ContainerStatus{exited("a", 1)}},
		want: corev1.PodStatus{Phase: corev1.PodSucceeded, QOSClass: corev1.PodQOSBurstable,
			ContainerStatuses: []corev1.ContainerStatus{exited("a", 1)},
			Conditions: []corev1.PodCondition{
				cond(corev1.PodReadyToStartContainers, false, t1, "", ""),
				cond(corev1.PodInitialized, true, t1, "", ""),
				cond(corev1.ContainersReady, false, t1, "PodCompleted", ""),
				cond(corev1.PodReady, false, t1, "PodCompleted", ""),
			}},
	}, {
		name:  "stopped with the node: Failed, Terminated, whatever the exit code",
		pod:   pod(nil, scheduled),
		facts: podFacts{Containers: []corev1.ContainerStatus{exited("a", 0)}, Terminating: true, Shutdown: true},
		want: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Terminated", Message: "the local node stopped", QOSClass: corev1.PodQOSBurstable,
			ContainerStatuses: []corev1.ContainerStatus{exited("a", 0)},
			Conditions: []corev1.PodCondition{scheduled,
				cond(corev1.PodReadyToStartContainers, false, t1, "", ""),
				cond(corev1.PodInitialized, true, t1, "", ""),
				cond(corev1.ContainersReady, false, t1, "PodCompleted", ""),
				cond(corev1.PodReady, false, t1, "PodCompleted", ""),
			}},
	}, {
		name:  "running while stopping with the node: no reason yet",
		pod:   pod(nil, scheduled, cond(corev1.PodReadyToStartContainers, true, t0, "", ""), cond(corev1.PodInitialized, true, t0, "", "")),
		facts: podFacts{Containers: []corev1.ContainerStatus{running("a", false)}, SandboxReady: true, Terminating: true, Shutdown: true},
		want: corev1.PodStatus{Phase: corev1.PodRunning, QOSClass: corev1.PodQOSBurstable,
			ContainerStatuses: []corev1.ContainerStatus{running("a", false)},
			Conditions: []corev1.PodCondition{scheduled,
				cond(corev1.PodReadyToStartContainers, true, t0, "", ""),
				cond(corev1.PodInitialized, true, t0, "", ""),
				cond(corev1.ContainersReady, false, t1, "ContainersNotReady", "containers with unready status: [a]"),
				cond(corev1.PodReady, false, t1, "ContainersNotReady", "containers with unready status: [a]"),
			}},
	}, {
		name:  "lost with the node: the override wins",
		pod:   pod(nil, scheduled),
		facts: podFacts{Containers: []corev1.ContainerStatus{running("a", true)}, Phase: corev1.PodFailed, Reason: ReasonNodeRestarted, Message: "gone"},
		want: corev1.PodStatus{Phase: corev1.PodFailed, Reason: ReasonNodeRestarted, Message: "gone", QOSClass: corev1.PodQOSBurstable,
			ContainerStatuses: []corev1.ContainerStatus{running("a", true)},
			Conditions: []corev1.PodCondition{scheduled,
				cond(corev1.PodReadyToStartContainers, false, t1, "", ""),
				cond(corev1.PodInitialized, true, t1, "", ""),
				cond(corev1.ContainersReady, false, t1, "PodCompleted", ""),
				cond(corev1.PodReady, false, t1, "PodCompleted", ""),
			}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := podStatus(tc.pod, tc.facts, t1)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("podStatus (-want +got):\n%s", d)
			}
		})
	}
}

func TestExpandVars(t *testing.T) {
	vars := map[string]string{"A": "1", "B": "two"}
	for in, want := range map[string]string{
		"$(A)-$(B)":   "1-two",
		"$(C)":        "$(C)",
		"$$(A)":       "$(A)",
		"cost $5":     "cost $5",
		"$(A":         "$(A",
		"x$":          "x$",
		"$(A)$(A)$$x": "11$x",
	} {
		if got := expandVars(in, vars); got != want {
			t.Errorf("expandVars(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestStatIn(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"run/virtkit/u", "etc"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "run/virtkit/u/ready"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"var": "/", "etc/run": "../run", "loop": "/loop"} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/run", filepath.Join(root, "run2")); err != nil {
		t.Fatal(err)
	}
	for path, ok := range map[string]bool{
		"/run/virtkit/u/ready":        true,
		"/var/run2/virtkit/u/ready":   true, // absolute links stay inside root
		"/etc/run/virtkit/u/ready":    true,
		"/../../run/virtkit/u/ready":  true,
		"/run/virtkit/u/absent":       false,
		"/loop/x":                     false,
		"/var/var/var/run2/virtkit/u": true,
	} {
		_, err := statIn(root, path)
		if (err == nil) != ok {
			t.Errorf("statIn(%q) = %v, want found=%v", path, err, ok)
		}
	}
}

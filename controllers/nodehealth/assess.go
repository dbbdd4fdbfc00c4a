package nodehealth

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"

	vmictl "github.com/virtkit/virtkit/controllers/vmi"
)

// Defaults of Options.
const (
	// DefaultHeartbeatTimeout is KubeVirt's: a handler silent this long is
	// unresponsive.
	DefaultHeartbeatTimeout = 5 * time.Minute
	// DefaultNotReadyGrace is how long a node may be not Ready before its
	// VMIs are failed and their pods force-deleted: the default toleration of
	// node.kubernetes.io/not-ready that pods get.
	DefaultNotReadyGrace = 5 * time.Minute
	// DefaultRecheck is how often an unresponsive node is looked at again.
	DefaultRecheck = time.Minute
)

// Options are the controller's timings.
type Options struct {
	HeartbeatTimeout time.Duration
	NotReadyGrace    time.Duration
	Recheck          time.Duration
}

func (o Options) withDefaults() Options {
	if o.HeartbeatTimeout <= 0 {
		o.HeartbeatTimeout = DefaultHeartbeatTimeout
	}
	if o.NotReadyGrace <= 0 {
		o.NotReadyGrace = DefaultNotReadyGrace
	}
	if o.Recheck <= 0 {
		o.Recheck = DefaultRecheck
	}
	return o
}

// Health is what [Assess] found.
type Health struct {
	// Unresponsive: the node is gone, or its handler's heartbeat is older
	// than the timeout.
	Unresponsive bool
	// Down: the node is gone, or not Ready for longer than the grace period.
	Down bool
	// Next is when the node should be looked at again to see it change
	// (zero: only an event can change it).
	Next time.Time
}

// Assess judges node (nil: it is gone) at now.
func Assess(node *corev1.Node, now time.Time, o Options) Health {
	o = o.withDefaults()
	if node == nil {
		return Health{Unresponsive: true, Down: true}
	}
	var h Health
	if beat, ok := node.Annotations[virtv1.VirtHandlerHeartbeat]; ok {
		t, err := time.Parse(time.RFC3339, beat)
		switch {
		case err != nil:
			// Unreadable: not a beat the handler wrote; look again soon.
			h.Next = now.Add(o.Recheck)
		case now.Sub(t) > o.HeartbeatTimeout:
			h.Unresponsive = true
		default:
			h.Next = t.Add(o.HeartbeatTimeout + time.Second)
		}
	}
	for _, c := range node.Status.Conditions {
		if c.Type != corev1.NodeReady || c.Status == corev1.ConditionTrue {
			continue
		}
		if since := c.LastTransitionTime.Time; now.Sub(since) > o.NotReadyGrace {
			h.Down = true
		} else if next := since.Add(o.NotReadyGrace + time.Second); h.Next.IsZero() || next.Before(h.Next) {
			h.Next = next
		}
	}
	if h.Unresponsive && (h.Next.IsZero() || now.Add(o.Recheck).Before(h.Next)) {
		h.Next = now.Add(o.Recheck)
	}
	return h
}

// LauncherAlive reports whether pod, a VMI's launcher, may still run its
// guest: it has not ended by the VMI controller's rule
// (controllers/vmi.PodEnded: the pod, or its compute container).
func LauncherAlive(pod *corev1.Pod) bool { return !vmictl.PodEnded(pod) }

// Action is what to do with one VMI of an unresponsive node.
type Action struct {
	// Fail moves the VMI to Failed (reason NodeUnresponsive).
	Fail bool
	// ForceDeletePods removes its launcher pods with no grace period.
	ForceDeletePods bool
}

// Plan decides for a VMI that is not final on a node judged h, given
// whether any of its launcher pods is alive.
func Plan(h Health, launcherAlive bool) Action {
	switch {
	case !h.Unresponsive:
		return Action{}
	case h.Down:
		return Action{Fail: true, ForceDeletePods: true}
	case !launcherAlive:
		return Action{Fail: true}
	}
	return Action{}
}

package vm

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
)

// Backoff is KubeVirt's start-failure backoff: after the n-th consecutive VMI
// that failed before ever running, wait interval*n² plus up to half of that
// at random, at most Max, where interval is Max/30 but at least 10 s.
type Backoff struct {
	// Max caps the delay (KubeVirt: 300 s).
	Max time.Duration
	// Jitter returns a random number in [0, n).
	Jitter func(n int) int
}

// Delay returns the wait before the next start after failCount failures.
func (b Backoff) Delay(failCount int) time.Duration {
	maxSec := int(b.Max / time.Second)
	if failCount <= 0 {
		failCount = 1
	}
	interval := max(maxSec/30, 10)
	delay := interval * failCount * failCount
	if b.Jitter != nil {
		delay += b.Jitter(delay/2 + 1)
	}
	return time.Duration(min(delay, maxSec)) * time.Second
}

// wasRunning reports whether vmi ever reached the Running phase.
func wasRunning(vmi *virtv1.VirtualMachineInstance) bool {
	if vmi == nil {
		return false
	}
	for _, ts := range vmi.Status.PhaseTransitionTimestamps {
		if ts.Phase == virtv1.Running {
			return true
		}
	}
	return vmi.Status.Phase == virtv1.Running
}

// failedEarly reports whether vmi ended without ever running.
func failedEarly(vmi *virtv1.VirtualMachineInstance) bool {
	return vmi != nil && vmi.IsFinal() && !wasRunning(vmi)
}

// restarts reports whether strategy restarts VMIs by itself, so that start
// failures are tracked for it.
func restarts(strategy virtv1.VirtualMachineRunStrategy) bool {
	switch strategy {
	case virtv1.RunStrategyAlways, virtv1.RunStrategyRerunOnFailure, virtv1.RunStrategyOnce:
		return true
	}
	return false
}

// nextStartFailure is KubeVirt's syncStartFailureStatus: a VMI that ran
// clears the record, as does a strategy that does not restart; a VMI that
// ended without running is counted once and pushes the next start back.
func nextStartFailure(cur *virtv1.VirtualMachineStartFailure, strategy virtv1.VirtualMachineRunStrategy,
	vmi *virtv1.VirtualMachineInstance, now time.Time, b Backoff) *virtv1.VirtualMachineStartFailure {
	if wasRunning(vmi) || !restarts(strategy) {
		return nil
	}
	if !failedEarly(vmi) {
		return cur
	}
	if cur != nil && cur.LastFailedVMIUID == vmi.UID {
		return cur // already counted
	}
	count := 1
	if cur != nil {
		count = cur.ConsecutiveFailCount + 1
	}
	retry := metav1.NewTime(now.Add(b.Delay(count)).Truncate(time.Second))
	return &virtv1.VirtualMachineStartFailure{
		ConsecutiveFailCount: count,
		LastFailedVMIUID:     vmi.UID,
		RetryAfterTimestamp:  &retry,
	}
}

// backoffLeft returns how long a start must still wait because of earlier
// start failures.
func backoffLeft(vm *virtv1.VirtualMachine, now time.Time) time.Duration {
	f := vm.Status.StartFailure
	if f == nil || f.RetryAfterTimestamp == nil {
		return 0
	}
	return max(f.RetryAfterTimestamp.Sub(now), 0)
}

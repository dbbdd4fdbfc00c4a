package handler

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// The wait before retrying a guest whose start failed doubles from
// startRetryMin up to startRetryMax, as KubeVirt backs off a VM that keeps
// failing to start.
const (
	startRetryMin = time.Second
	startRetryMax = 5 * time.Minute
)

// startRetries spaces the start attempts of each VMI whose guest failed to
// start. Without it every failure, written to the VMI's status, would
// bring the VMI back at once (its update is an event) and the start would
// run again and again: a guest that cannot start would be defined and
// undefined many times a second.
type startRetries struct {
	mu    sync.Mutex
	byVMI map[types.NamespacedName]startRetry
}

type startRetry struct {
	uid      types.UID
	failures int
	next     time.Time
}

// wait is how long the VMI key of UID uid must wait, at now, before its
// next start; zero when it may start.
func (s *startRetries) wait(key types.NamespacedName, uid types.UID, now time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.byVMI[key]
	if !ok || r.uid != uid || !now.Before(r.next) {
		return 0
	}
	return r.next.Sub(now)
}

// failed records a failed start at now and returns the wait before the
// next one.
func (s *startRetries) failed(key types.NamespacedName, uid types.UID, now time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byVMI == nil {
		s.byVMI = map[types.NamespacedName]startRetry{}
	}
	r := s.byVMI[key]
	if r.uid != uid {
		r = startRetry{uid: uid}
	}
	d := startRetryMin
	for i := 0; i < r.failures && d < startRetryMax; i++ {
		d *= 2
	}
	d = min(d, startRetryMax)
	r.failures++
	r.next = now.Add(d)
	s.byVMI[key] = r
	return d
}

// forget drops what is known of key: its guest started, or it is gone.
func (s *startRetries) forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byVMI, key)
}

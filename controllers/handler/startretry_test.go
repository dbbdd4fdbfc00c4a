package handler

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

// The wait after each failed start doubles from a second up to five
// minutes; a new VMI of the same name starts afresh, and forget clears it.
func TestStartRetries(t *testing.T) {
	var s startRetries
	key := types.NamespacedName{Namespace: "ns", Name: "vm"}
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	if d := s.wait(key, "u1", now); d != 0 {
		t.Fatalf("before any failure: wait %s", d)
	}
	var got []time.Duration
	for range 11 {
		got = append(got, s.failed(key, "u1", now))
	}
	want := []time.Duration{1 * time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second,
		64 * time.Second, 128 * time.Second, 256 * time.Second, 5 * time.Minute, 5 * time.Minute}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("waits (-want +got):\n%s", d)
	}
	if d := s.wait(key, "u1", now.Add(time.Minute)); d != 4*time.Minute {
		t.Errorf("a minute after the last failure: wait %s, want 4m", d)
	}
	if d := s.wait(key, "u2", now); d != 0 {
		t.Errorf("a new VMI of the same name: wait %s, want none", d)
	}
	if d := s.failed(key, "u2", now); d != time.Second {
		t.Errorf("a new VMI's first failure: wait %s, want 1s", d)
	}
	s.forget(key)
	if d := s.wait(key, "u2", now); d != 0 {
		t.Errorf("after forget: wait %s", d)
	}
}

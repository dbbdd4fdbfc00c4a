package domain_test

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/virtkit/virtkit/virt/domain"
)

func TestShutoffReasonOfAStopEvent(t *testing.T) {
	for _, tc := range []struct {
		detail int
		want   domain.Reason
	}{
		{domain.DetailStoppedShutdown, domain.ReasonShutoffShutdown},
		{domain.DetailStoppedDestroyed, domain.ReasonShutoffDestroyed},
		{domain.DetailStoppedCrashed, domain.ReasonShutoffCrashed},
		{domain.DetailStoppedMigrated, domain.ReasonShutoffMigrated},
		{domain.DetailStoppedSaved, domain.ReasonShutoffSaved},
		{domain.DetailStoppedFailed, domain.ReasonShutoffFailed},
		{domain.DetailStoppedFromSnapshot, domain.ReasonShutoffFromSnapshot},
		{99, domain.ReasonUnknown},
	} {
		got, ok := domain.Event{Type: domain.EventStopped, Detail: tc.detail}.ShutoffReason()
		assert.Assert(t, ok)
		assert.Equal(t, got, tc.want, "stop detail %d", tc.detail)
	}
	_, ok := domain.Event{Type: domain.EventStarted}.ShutoffReason()
	assert.Assert(t, !ok, "a start event has no shut-off reason")
}

package events_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/tools/record"

	"github.com/virtkit/virtkit/controllers/events"
)

// manager hands out one FakeRecorder and remembers the component asked for.
type manager struct {
	rec       *record.FakeRecorder
	component string
}

func (m *manager) GetEventRecorderFor(name string) record.EventRecorder {
	m.component = name
	return m.rec
}

func TestOrManager(t *testing.T) {
	own := record.NewFakeRecorder(1)
	tests := []struct {
		name          string
		rec           events.Recorder
		wantManager   bool
		wantComponent string
	}{
		{name: "none set: the manager's", rec: nil, wantManager: true, wantComponent: "virt-handler"},
		{name: "the default: the manager's", rec: events.Discard(), wantManager: true, wantComponent: "virt-handler"},
		{name: "one set: kept", rec: own},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &manager{rec: record.NewFakeRecorder(1)}
			got := events.OrManager(tt.rec, m, "virt-handler")
			want := events.Recorder(own)
			if tt.wantManager {
				want = m.rec
			}
			if got != want {
				t.Errorf("OrManager returned %#v, want %#v", got, want)
			}
			if diff := cmp.Diff(tt.wantComponent, m.component); diff != "" {
				t.Errorf("component asked for (-want +got):\n%s", diff)
			}
		})
	}
}

package handler

import (
	"testing"
	"time"
)

// A guest whose agent does not answer is asked less and less often, down
// to every agentPollIdle; one that answers is asked at KubeVirt's pace, and
// when it stops answering the handler looks often again.
func TestNextAgentPoll(t *testing.T) {
	s := time.Second
	wait, waits := time.Duration(0), []time.Duration(nil)
	for range 7 {
		wait = nextAgentPoll(wait, false)
		waits = append(waits, wait)
	}
	want := []time.Duration{3 * s, 6 * s, 12 * s, 24 * s, 30 * s, 30 * s, 30 * s}
	for i := range want {
		if waits[i] != want[i] {
			t.Fatalf("waits without an agent %v, want %v", waits, want)
		}
	}
	if got := nextAgentPoll(30*s, true); got != agentPollConnected {
		t.Errorf("after an answer: %v, want %v", got, agentPollConnected)
	}
	if got := nextAgentPoll(agentPollConnected, false); got != agentPollWaiting {
		t.Errorf("an agent that stopped answering: %v, want %v", got, agentPollWaiting)
	}
}

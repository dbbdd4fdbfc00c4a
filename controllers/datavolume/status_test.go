package datavolume

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"

	"github.com/virtkit/virtkit/virt/storage/dvspec"
	"github.com/virtkit/virtkit/virt/storage/importer/contract"
)

// brief is the part of a status a row checks.
type brief struct {
	Phase                   cdiv1.DataVolumePhase
	Progress                cdiv1.DataVolumeProgress
	Restarts                int32
	Bound, Running, Ready   string // status/reason
	RunningMsg, EventReason string
}

func briefOf(st cdiv1.DataVolumeStatus, evs []Event) brief {
	b := brief{Phase: st.Phase, Progress: st.Progress, Restarts: st.RestartCount}
	for _, c := range st.Conditions {
		s := string(c.Status) + "/" + c.Reason
		switch c.Type {
		case cdiv1.DataVolumeBound:
			b.Bound = s
		case cdiv1.DataVolumeRunning:
			b.Running, b.RunningMsg = s, c.Message
		case cdiv1.DataVolumeReady:
			b.Ready = s
		}
	}
	var reasons []string
	for _, ev := range evs {
		reasons = append(reasons, ev.Reason)
	}
	b.EventReason = strings.Join(reasons, ",")
	return b
}

func importerPod(phase corev1.PodPhase, cs corev1.ContainerStatus) *corev1.Pod {
	return &corev1.Pod{Status: corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{cs}}}
}

func terminated(code int32, out contract.Outcome) corev1.ContainerState {
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: map[bool]string{true: "Completed", false: "Error"}[code == 0],
		Message: string(out.Marshal())}}
}

func TestNextStatus(t *testing.T) {
	bound := boundClaim("a", "64Mi")
	pending := boundClaim("a", "64Mi")
	pending.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}
	pct := 42.5
	cloneSrc := dvspec.Source{Kind: contract.SourceFile, Claim: &cdiv1.DataVolumeSourcePVC{Namespace: "default", Name: "golden"}}
	unreachable := contract.Outcome{Message: `source https://example.com/d: cannot be reached: dial tcp: connection refused`, Reason: "Unreachable"}
	corrupt := contract.Outcome{Message: "source https://example.com/d: corrupt gzip data", Reason: "Corrupt", Fatal: true}
	for _, tc := range []struct {
		name  string
		phase cdiv1.DataVolumePhase // before
		o     Observed
		want  brief
	}{
		{"invalid spec", "", Observed{Invalid: errors.New("spec.source.registry: not supported")},
			brief{Phase: cdiv1.Failed, Progress: "N/A", Bound: "False/NotFound", Running: "False/ErrInvalidSpec", Ready: "False/ErrInvalidSpec",
				RunningMsg: "spec.source.registry: not supported", EventReason: ReasonInvalidSpec}},
		{"no claim yet", "", Observed{}, brief{Phase: cdiv1.Pending, Progress: "N/A", Bound: "False/NotFound", Ready: "False/"}},
		{"foreign claim", "", Observed{Claim: bound, Foreign: true},
			brief{Phase: cdiv1.Pending, Progress: "N/A", Bound: "False/ErrResourceExists", Ready: "False/", EventReason: ReasonResourceExists}},
		{"claim pending", "", Observed{Claim: pending},
			brief{Phase: cdiv1.Pending, Progress: "N/A", Bound: "False/Pending", Running: "False/", Ready: "False/"}},
		{"claim waits for its first consumer", cdiv1.Pending, Observed{Claim: pending, WaitsForConsumer: true},
			brief{Phase: cdiv1.WaitForFirstConsumer, Progress: "N/A", Bound: "False/Pending", Running: "False/", Ready: "False/"}},
		{"bound, no pod: scheduled", cdiv1.Pending, Observed{Claim: bound},
			brief{Phase: cdiv1.ImportScheduled, Progress: "N/A", Bound: "True/Bound", Ready: "False/", EventReason: ReasonImportScheduled}},
		{"pod creating", cdiv1.ImportScheduled, Observed{Claim: bound, Pod: importerPod(corev1.PodPending,
			corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}})},
			brief{Phase: cdiv1.ImportScheduled, Progress: "N/A", Bound: "True/Bound", Running: "False/ContainerCreating", Ready: "False/"}},
		{"image pull", cdiv1.ImportScheduled, Observed{Claim: bound, Pod: importerPod(corev1.PodPending,
			corev1.ContainerStatus{Image: "img", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull"}}})},
			brief{Phase: cdiv1.ImportScheduled, Progress: "N/A", Bound: "True/Bound", Running: "False/ImagePullFailed", RunningMsg: "failed to pull image: img", Ready: "False/"}},
		{"running with progress", cdiv1.ImportScheduled, Observed{Claim: bound, Progress: &pct, Pod: importerPod(corev1.PodRunning,
			corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}})},
			brief{Phase: cdiv1.ImportInProgress, Progress: "42.50%", Bound: "True/Bound", Running: "True/Pod is running", Ready: "False/TransferRunning",
				EventReason: ReasonImportInProgress}},
		{"retrying an unreachable source", cdiv1.ImportInProgress, Observed{Claim: bound, Pod: importerPod(corev1.PodRunning,
			corev1.ContainerStatus{RestartCount: 2, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
				LastTerminationState: terminated(1, unreachable)})},
			brief{Phase: cdiv1.ImportInProgress, Progress: "N/A", Restarts: 2, Bound: "True/Bound", Running: "False/Error", RunningMsg: unreachable.Message, Ready: "False/",
				EventReason: ReasonImportFailed}},
		{"running again after a failed attempt", cdiv1.ImportInProgress, Observed{Claim: bound, Pod: importerPod(corev1.PodRunning,
			corev1.ContainerStatus{RestartCount: 1, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
				LastTerminationState: terminated(1, unreachable)})},
			brief{Phase: cdiv1.ImportInProgress, Progress: "N/A", Restarts: 1, Bound: "True/Bound", Running: "True/Pod is running", Ready: "False/TransferRunning",
				EventReason: ReasonImportFailed}},
		{"finished, claim not marked yet", cdiv1.ImportInProgress, Observed{Claim: bound, Pod: importerPod(corev1.PodSucceeded,
			corev1.ContainerStatus{State: terminated(0, contract.Outcome{Message: "Import Complete"})})},
			brief{Phase: cdiv1.ImportInProgress, Progress: "N/A", Bound: "True/Bound", Running: "False/Completed", RunningMsg: "Import Complete", Ready: "False/"}},
		{"populated", cdiv1.ImportInProgress, Observed{Claim: bound, Populated: true},
			brief{Phase: cdiv1.Succeeded, Progress: "100.0%", Bound: "True/Bound", Running: "False/Completed", RunningMsg: "Import Complete", Ready: "True/",
				EventReason: ReasonImportSucceeded}},
		{"fatal", cdiv1.ImportInProgress, Observed{Claim: bound, Pod: importerPod(corev1.PodSucceeded,
			corev1.ContainerStatus{State: terminated(0, corrupt)})},
			brief{Phase: cdiv1.Failed, Progress: "N/A", Bound: "True/Bound", Running: "False/Corrupt", RunningMsg: corrupt.Message, Ready: "False/Corrupt",
				EventReason: ReasonImportFailed}},
		{"clone waits for its source", "", Observed{Claim: bound, Source: cloneSrc, Blocked: "source claim default/golden is in use by pod virt-launcher-x", BlockedReason: ReasonCloneSourceInUse},
			brief{Phase: cdiv1.Pending, Progress: "N/A", Bound: "True/Bound", Running: "False/CloneSourceInUse",
				RunningMsg: "source claim default/golden is in use by pod virt-launcher-x", Ready: "False/"}},
		{"clone of an unknown size waits for its source", "", Observed{Source: cloneSrc, Blocked: "source claim default/golden not found", BlockedReason: ReasonCloneNoSource},
			brief{Phase: cdiv1.Pending, Progress: "N/A", Bound: "False/NotFound", Running: "False/CloneWithoutSource",
				RunningMsg: "source claim default/golden not found", Ready: "False/"}},
		{"clone scheduled", cdiv1.Pending, Observed{Claim: bound, Source: cloneSrc},
			brief{Phase: cdiv1.CloneScheduled, Progress: "N/A", Bound: "True/Bound", Ready: "False/", EventReason: ReasonCloneScheduled}},
		{"clone running", cdiv1.CloneScheduled, Observed{Claim: bound, Source: cloneSrc, Pod: importerPod(corev1.PodRunning,
			corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}})},
			brief{Phase: cdiv1.CloneInProgress, Progress: "N/A", Bound: "True/Bound", Running: "True/Pod is running", Ready: "False/TransferRunning",
				EventReason: ReasonCloneInProgress}},
		{"clone done", cdiv1.CloneInProgress, Observed{Claim: bound, Source: cloneSrc, Populated: true},
			brief{Phase: cdiv1.Succeeded, Progress: "100.0%", Bound: "True/Bound", Running: "False/Completed", RunningMsg: "Clone Complete", Ready: "True/",
				EventReason: ReasonCloneSucceeded}},
		{"failed stays failed", cdiv1.Failed, Observed{Claim: bound}, brief{Phase: cdiv1.Failed, Progress: "N/A"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dv := httpDV("default", "a", "https://example.com/d")
			dv.Status.Phase = tc.phase
			st, ev := NextStatus(dv, tc.o, t0)
			if diff := cmp.Diff(tc.want, briefOf(st, ev)); diff != "" {
				t.Errorf("NextStatus (-want +got):\n%s", diff)
			}
			// A second look at the same world changes nothing.
			dv.Status = st
			again, ev2 := NextStatus(dv, tc.o, t0)
			if diff := cmp.Diff(st, again); diff != "" || len(ev2) > 0 {
				t.Errorf("NextStatus is not stable (event %v):\n%s", ev2, diff)
			}
		})
	}
}

func TestParseProgress(t *testing.T) {
	page := `# HELP kubevirt_cdi_import_progress_total The import progress in percentage
# TYPE kubevirt_cdi_import_progress_total counter
kubevirt_cdi_import_progress_total{ownerUID="other"} 99
kubevirt_cdi_import_progress_total{ownerUID="mine"} 42.5
kubevirt_cdi_import_progress_total{ownerUID="mine"}
`
	for _, tc := range []struct {
		owner string
		want  float64
		ok    bool
	}{{"mine", 42.5, true}, {"other", 99, true}, {"absent", 0, false}} {
		got, ok := ParseProgress(stringsReader(page), tc.owner)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseProgress(%s) = %v, %v; want %v, %v", tc.owner, got, ok, tc.want, tc.ok)
		}
	}
}

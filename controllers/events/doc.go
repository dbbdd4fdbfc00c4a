// Package events is the one event recorder type of the reconcilers under
// controllers/ and the handler: Recorder, the part of client-go's
// record.EventRecorder they call; Discard, the default of a reconciler
// built without a manager; and OrManager, which a SetupWithManager uses to
// replace that default with the manager's recorder.
//
// The events are core/v1 Events, which KubeVirt's clients (virtctl,
// kubectl describe) read, under KubeVirt's component names. For tests,
// client-go's record.FakeRecorder is a Recorder.
package events

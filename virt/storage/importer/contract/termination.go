package contract

import (
	"encoding/json"
	"fmt"
)

// TerminationMessagePath is where the importer leaves its Outcome, the
// container's terminationMessagePath.
const TerminationMessagePath = "/dev/termination-log"

// MaxTerminationMessage is the most the kubelet keeps of a termination
// message; an Outcome is cut to fit.
const MaxTerminationMessage = 4096

// Outcome is what an importer run ended with, as JSON in its termination
// message.
//
// A retryable failure (a source that cannot be reached) exits non-zero, so
// that the pod restarts with the kubelet's back-off; a permanent one
// (a corrupt image, an image larger than its claim, an unsupported format,
// a checksum mismatch) exits 0 with Fatal set, so that it is not retried, as
// CDI's importer does for a checksum mismatch.
type Outcome struct {
	// Message says what happened, for the DataVolume's Running condition.
	Message string `json:"message"`
	// Reason is a CamelCase word for the condition's reason on failure.
	Reason string `json:"reason,omitempty"`
	// Fatal marks a failure retrying cannot mend.
	Fatal bool `json:"fatal,omitempty"`
	// Format and Compression are what the source held, on success.
	Format      string `json:"format,omitempty"`
	Compression string `json:"compression,omitempty"`
	// VirtualSize is the imported image's size before it was extended to
	// the claim, on success.
	VirtualSize int64 `json:"virtualSize,omitempty"`
	// PreallocationApplied says every block of the disk was allocated,
	// on success (CDI's term).
	PreallocationApplied bool `json:"preallocationApplied,omitempty"`
	// ScratchRequired says the import stopped before writing because the
	// image needs scratch space and the pod had none (Args.Scratch
	// empty): the next pod gets a scratch claim (ScratchDir). Reason is
	// then ReasonScratchRequired.
	ScratchRequired bool `json:"scratchRequired,omitempty"`
}

// ReasonScratchRequired is the Outcome's reason when ScratchRequired.
const ReasonScratchRequired = "ScratchSpaceRequired"

// Marshal renders o within MaxTerminationMessage bytes, shortening
// Message if it must.
func (o Outcome) Marshal() []byte {
	for {
		b, err := json.Marshal(o)
		if err != nil || len(b) <= MaxTerminationMessage || len(o.Message) == 0 {
			return b
		}
		cut := len(o.Message) - (len(b) - MaxTerminationMessage) - 3
		if cut < 0 {
			cut = 0
		}
		o.Message = o.Message[:cut] + "..."
	}
}

// ParseOutcome reads a termination message the importer wrote.
func ParseOutcome(msg string) (Outcome, error) {
	var o Outcome
	if err := json.Unmarshal([]byte(msg), &o); err != nil {
		return Outcome{}, fmt.Errorf("importer termination message %.80q: %w", msg, err)
	}
	return o, nil
}

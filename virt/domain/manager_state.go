package domain

import "strconv"

// State is a domain's state as libvirt reports it (virDomainState); the
// numeric values are libvirt's, so a libvirt state converts with State(s).
type State int

// Domain states, numbered as libvirt numbers them.
const (
	StateNoState     State = 0
	StateRunning     State = 1
	StateBlocked     State = 2
	StatePaused      State = 3
	StateShutdown    State = 4 // the guest is shutting down
	StateShutoff     State = 5
	StateCrashed     State = 6
	StatePMSuspended State = 7
)

var stateNames = [...]string{"nostate", "running", "blocked", "paused", "shutdown", "shutoff", "crashed", "pmsuspended"}

func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "state(" + strconv.Itoa(int(s)) + ")"
}

// Reason says why a domain is in its State. libvirt numbers reasons per
// state (virDomainRunningReason, virDomainShutoffReason, ...), so a Reason
// means something only together with its State; the constants below carry
// the state in their name. Zero is "unknown" in every state.
type Reason int

// ReasonUnknown is the reason libvirt reports when it has none.
const ReasonUnknown Reason = 0

// Reasons of StateRunning (virDomainRunningReason).
const (
	ReasonRunningBooted            Reason = 1
	ReasonRunningMigrated          Reason = 2
	ReasonRunningRestored          Reason = 3
	ReasonRunningFromSnapshot      Reason = 4
	ReasonRunningUnpaused          Reason = 5
	ReasonRunningMigrationCanceled Reason = 6
	ReasonRunningSaveCanceled      Reason = 7
	ReasonRunningWakeup            Reason = 8
	ReasonRunningCrashed           Reason = 9
	ReasonRunningPostcopy          Reason = 10
	ReasonRunningPostcopyFailed    Reason = 11
)

// Reasons of StatePaused (virDomainPausedReason).
const (
	ReasonPausedUser           Reason = 1
	ReasonPausedMigration      Reason = 2
	ReasonPausedSave           Reason = 3
	ReasonPausedDump           Reason = 4
	ReasonPausedIOError        Reason = 5
	ReasonPausedWatchdog       Reason = 6
	ReasonPausedFromSnapshot   Reason = 7
	ReasonPausedShuttingDown   Reason = 8
	ReasonPausedSnapshot       Reason = 9
	ReasonPausedCrashed        Reason = 10
	ReasonPausedStartingUp     Reason = 11
	ReasonPausedPostcopy       Reason = 12
	ReasonPausedPostcopyFailed Reason = 13
)

// Reasons of StateShutdown (virDomainShutdownReason).
const ReasonShutdownUser Reason = 1

// Reasons of StateShutoff (virDomainShutoffReason).
const (
	ReasonShutoffShutdown     Reason = 1
	ReasonShutoffDestroyed    Reason = 2
	ReasonShutoffCrashed      Reason = 3
	ReasonShutoffMigrated     Reason = 4
	ReasonShutoffSaved        Reason = 5
	ReasonShutoffFailed       Reason = 6
	ReasonShutoffFromSnapshot Reason = 7
	ReasonShutoffDaemon       Reason = 8
)

// Reasons of StateCrashed (virDomainCrashedReason).
const ReasonCrashedPanicked Reason = 1

var reasonNames = map[State][]string{
	StateRunning:  {"unknown", "booted", "migrated", "restored", "from-snapshot", "unpaused", "migration-canceled", "save-canceled", "wakeup", "crashed", "postcopy", "postcopy-failed"},
	StatePaused:   {"unknown", "user", "migration", "save", "dump", "ioerror", "watchdog", "from-snapshot", "shutting-down", "snapshot", "crashed", "starting-up", "postcopy", "postcopy-failed"},
	StateShutdown: {"unknown", "user"},
	StateShutoff:  {"unknown", "shutdown", "destroyed", "crashed", "migrated", "saved", "failed", "from-snapshot", "daemon"},
	StateCrashed:  {"unknown", "panicked"},
}

// ReasonString names reason r of state s as libvirt's virsh does, e.g.
// ReasonString(StateShutoff, ReasonShutoffDestroyed) is "destroyed".
func ReasonString(s State, r Reason) string {
	names := reasonNames[s]
	if r >= 0 && int(r) < len(names) {
		return names[r]
	}
	if r == ReasonUnknown {
		return "unknown"
	}
	return "reason(" + strconv.Itoa(int(r)) + ")"
}

package domain

import (
	"strconv"
	"time"
)

// Event is one thing that happened to a domain, or to the connection.
type Event struct {
	// Domain is the domain's name; empty for connection events.
	Domain string
	// Type says what happened. Lifecycle types carry libvirt's numbers.
	Type EventType
	// Detail refines Type with libvirt's per-type detail number (for
	// EventStopped: DetailStoppedShutdown, DetailStoppedDestroyed, ...).
	// Zero for device and connection events.
	Detail int
	// Device is the alias of the device of a device event (e.g. "virtio-disk1").
	Device string
	// Time is when the Manager saw the event.
	Time time.Time
}

func (e Event) String() string {
	s := e.Type.String()
	if e.Type.Lifecycle() {
		s += "/" + strconv.Itoa(e.Detail)
	}
	if e.Device != "" {
		s += " " + e.Device
	}
	if e.Domain != "" {
		s = "domain " + quote(e.Domain) + ": " + s
	}
	return s
}

// EventType says what an Event reports.
type EventType int

// Lifecycle event types, numbered as libvirt's virDomainEventType.
const (
	EventDefined     EventType = 0
	EventUndefined   EventType = 1
	EventStarted     EventType = 2
	EventSuspended   EventType = 3
	EventResumed     EventType = 4
	EventStopped     EventType = 5
	EventShutdown    EventType = 6 // the guest is shutting down, or finished doing so
	EventPMSuspended EventType = 7
	EventCrashed     EventType = 8
)

// Device and guest event types (libvirt reports these through separate
// callbacks; their numbers here are virtkit's own).
const (
	EventDeviceAdded         EventType = 100
	EventDeviceRemoved       EventType = 101
	EventDeviceRemovalFailed EventType = 102
	EventReboot              EventType = 103 // the guest rebooted (or was reset)
)

// Connection events, with no Domain: what happened between them was not seen.
const (
	EventConnectionLost     EventType = 200
	EventConnectionRestored EventType = 201
)

// Lifecycle reports whether t is one of libvirt's lifecycle event types.
func (t EventType) Lifecycle() bool { return t >= EventDefined && t <= EventCrashed }

func (t EventType) String() string {
	switch t {
	case EventDefined:
		return "defined"
	case EventUndefined:
		return "undefined"
	case EventStarted:
		return "started"
	case EventSuspended:
		return "suspended"
	case EventResumed:
		return "resumed"
	case EventStopped:
		return "stopped"
	case EventShutdown:
		return "shutdown"
	case EventPMSuspended:
		return "pmsuspended"
	case EventCrashed:
		return "crashed"
	case EventDeviceAdded:
		return "device-added"
	case EventDeviceRemoved:
		return "device-removed"
	case EventDeviceRemovalFailed:
		return "device-removal-failed"
	case EventReboot:
		return "reboot"
	case EventConnectionLost:
		return "connection-lost"
	case EventConnectionRestored:
		return "connection-restored"
	}
	return "event(" + strconv.Itoa(int(t)) + ")"
}

// Details of lifecycle events the callers of a Manager commonly branch on,
// numbered as libvirt's virDomainEvent*DetailType.
const (
	DetailDefinedAdded   = 0
	DetailDefinedUpdated = 1

	DetailStartedBooted = 0

	DetailSuspendedPaused = 0

	DetailResumedUnpaused = 0

	DetailStoppedShutdown     = 0
	DetailStoppedDestroyed    = 1
	DetailStoppedCrashed      = 2
	DetailStoppedMigrated     = 3
	DetailStoppedSaved        = 4
	DetailStoppedFailed       = 5
	DetailStoppedFromSnapshot = 6

	DetailShutdownFinished = 0 // the guest finished shutting down
	DetailShutdownGuest    = 1 // the guest asked for it
	DetailShutdownHost     = 2 // the host asked for it
)

// ShutoffReason is the shut-off reason an EventStopped reports through its
// Detail, as State would report it while the domain is still defined: a
// stop event says how a domain ended even after the domain is gone. ok is
// false for other events. libvirt reports QEMU's unexpected exit as
// DetailStoppedFailed, which maps to ReasonShutoffFailed.
func (e Event) ShutoffReason() (r Reason, ok bool) {
	if e.Type != EventStopped {
		return ReasonUnknown, false
	}
	switch e.Detail {
	case DetailStoppedShutdown:
		return ReasonShutoffShutdown, true
	case DetailStoppedDestroyed:
		return ReasonShutoffDestroyed, true
	case DetailStoppedCrashed:
		return ReasonShutoffCrashed, true
	case DetailStoppedMigrated:
		return ReasonShutoffMigrated, true
	case DetailStoppedSaved:
		return ReasonShutoffSaved, true
	case DetailStoppedFailed:
		return ReasonShutoffFailed, true
	case DetailStoppedFromSnapshot:
		return ReasonShutoffFromSnapshot, true
	}
	return ReasonUnknown, true
}

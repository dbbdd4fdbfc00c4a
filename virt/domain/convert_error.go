package domain

import (
	"errors"
	"strconv"
)

// Sentinels that Convert errors match with errors.Is.
var (
	// ErrMissingPlan: a disk's volume has no entry in Host.Storage, or an
	// interface none in Host.Network. Plan first, then convert.
	ErrMissingPlan = errors.New("missing plan")
	// ErrMissingHostFact: the VMI asks for something the Host facts cannot
	// provide (too few dedicated CPUs, no assigned host device, an
	// unavailable hugepage size, no vsock CID).
	ErrMissingHostFact = errors.New("missing host fact")
	// ErrNotImplemented: a KubeVirt field virtkit does not convert yet. It is
	// reported, never silently dropped.
	ErrNotImplemented = errors.New("not implemented by virtkit")
	// ErrInvalidField: the field holds a value that has no domain equivalent
	// (an unknown bus, an unparsable quantity or address).
	ErrInvalidField = errors.New("invalid value")
)

// ConvertError is the error Convert returns: the field path in the VMI
// (as virt/spec and the API server spell it), what is wrong, and the
// sentinel a caller can branch on.
type ConvertError struct {
	// Field is the path of the offending field, e.g. "spec.domain.devices.disks[2]".
	Field string
	// Detail says what is wrong, in words.
	Detail string
	// Kind is one of ErrMissingPlan, ErrMissingHostFact, ErrNotImplemented,
	// ErrInvalidField.
	Kind error
}

func (e *ConvertError) Error() string {
	return e.Field + ": " + e.Detail
}

// Unwrap returns Kind, for errors.Is.
func (e *ConvertError) Unwrap() error { return e.Kind }

func convErr(kind error, field, detail string) error {
	return &ConvertError{Field: field, Detail: detail, Kind: kind}
}

// Field paths are built only on the error path, so conversion of a valid
// VMI allocates nothing for them.
const (
	pathDomain     = "spec.domain"
	pathDevices    = "spec.domain.devices"
	pathDisks      = "spec.domain.devices.disks"
	pathInterfaces = "spec.domain.devices.interfaces"
	pathCPU        = "spec.domain.cpu"
	pathMemory     = "spec.domain.memory"
	pathFirmware   = "spec.domain.firmware"
)

func indexed(base string, i int) string {
	return base + "[" + strconv.Itoa(i) + "]"
}

// fieldPath is the path of a list element, spelled out only when an error
// needs it.
type fieldPath struct {
	base string
	i    int
}

func (f fieldPath) at(sub string) string { return indexed(f.base, f.i) + sub }

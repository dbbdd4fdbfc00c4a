//go:build !linux

package importer

// setLimits does nothing where prlimit(2) is missing: the program runs
// unbounded, as any other.
func setLimits(int, Limits) error { return nil }

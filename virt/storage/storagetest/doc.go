// Package storagetest is the contract suite of virt/storage's Interface:
// one sequence of steps that every implementation must pass, run against
// the fake (virt/storage/fake) and the real Manager on real files in a
// temporary pod folder (virt/storage's tests).
//
// An implementation's test calls Run with a function that returns a
// Target: the Interface plus how to lay out the pod's files for the
// suite's VMI and how to read back what is in place. The suite plans the
// VMI's volumes, prepares them, plans again as a restarted launcher would,
// releases them and checks that nothing discardable is left, and feeds bad
// input that must come back as *storage.VolumeError naming the volume.
//
// It builds with CGO_ENABLED=0.
package storagetest

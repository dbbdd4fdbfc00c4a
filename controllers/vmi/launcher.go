package vmi

// The handler-launcher contract values the controller needs, mirrored from
// virt/launcher (layout.go, result.go) and daemons/virt-launcher so that this
// package does not depend on virt/domain, virt/network and virt/storage.
// Keep them in step with docs/sdk/launcher.md.
const (
	// launcherBinary is the launcher's executable in the launcher image.
	launcherBinary = "virt-launcher"
	// readyFileName is launcher.Layout.ReadyFile() relative to Layout.Root.
	readyFileName = "ready"

	exitGuestCrashed   = 2 // launcher.ExitGuestCrashed
	exitGuestDestroyed = 3 // launcher.ExitGuestDestroyed
	exitLibvirtdDied   = 4 // launcher.ExitLibvirtdDied
	exitSetupFailed    = 5 // launcher.ExitSetupFailed
)

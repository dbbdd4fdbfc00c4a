package csidriver

// Mounter makes a node's publications: what NodePublishVolume and
// NodeUnpublishVolume do to the host. [HostMounter] does it with bind
// mounts and loop devices; fake.Mounter records it, for tests without
// privileges.
type Mounter interface {
	// BindDir mounts the folder source at the folder target, read-only if
	// readOnly. target exists.
	BindDir(source, target string, readOnly bool) error
	// BindBlock attaches the file source as a block device and mounts
	// that device's node at the file target, read-only if readOnly.
	// target exists.
	BindBlock(source, target string, readOnly bool) error
	// Unmount undoes BindDir or BindBlock at target (detaching the block
	// device too). A target that is no mount point is not an error.
	Unmount(target string) error
	// Refresh makes the block device mounted at target (by BindBlock)
	// take its file's new size.
	Refresh(target string) error
	// IsMounted reports whether target is a mount point.
	IsMounted(target string) (bool, error)
}

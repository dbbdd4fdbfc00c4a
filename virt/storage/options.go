package storage

import "github.com/go-logr/logr"

// Option changes how a Manager plans and prepares.
type Option func(*options)

type options struct {
	layout     Layout
	inspector  Inspector
	fsOverhead float64
	log        logr.Logger
	// fsys holds the images (WithFS).
	fsys FS
	// owner, when set, owns the images Prepare makes (WithOwner).
	owner *owner
}

type owner struct{ uid, gid int }

func newOptions(opts []Option) options {
	o := options{fsys: HostFS{}, fsOverhead: DefaultFilesystemOverhead, log: logr.Discard()}
	for _, opt := range opts {
		opt(&o)
	}
	o.layout = o.layout.withDefaults()
	if o.inspector == nil {
		o.inspector = FSInspector{FS: o.fsys}
	}
	return o
}

// DefaultFilesystemOverhead is the share of a Filesystem claim kept free of
// disk.img for the file system's own use (CDI's default, 5.5%).
const DefaultFilesystemOverhead = 0.055

// WithLayout sets where the pod keeps volumes; empty fields keep KubeVirt's.
func WithLayout(l Layout) Option { return func(o *options) { o.layout = l } }

// WithFS makes the Manager read and write every image in fsys: for the
// handler, the launcher pod's root file system opened with virt/confined
// (InRoot), so that the plan, and so the domain document, keeps the paths
// as QEMU sees them in the pod (an overlay names its base by its pod path)
// while every path is resolved as the pod sees it and never leaves it. The
// planner reads through FSInspector on fsys unless WithInspector is given.
func WithFS(fsys FS) Option { return func(o *options) { o.fsys = fsys } }

// WithInspector replaces the file system reader the planner uses.
func WithInspector(i Inspector) Option { return func(o *options) { o.inspector = i } }

// WithFilesystemOverhead sets the share (0 to <1) of a Filesystem claim that
// a newly created disk.img leaves free.
func WithFilesystemOverhead(f float64) Option { return func(o *options) { o.fsOverhead = f } }

// WithOwner gives every image Prepare makes (overlays, ISOs, a new claim's
// or hostDisk's disk.img, an emptyDisk) to user uid and group gid, the user
// QEMU runs as, through the open file (fchown): a QEMU that is not root,
// under a libvirt that changes no owner (a session daemon), can open them.
// The writable images QEMU uses that were there before (a claim's or
// hostDisk's disk.img, a block device) are given to it too, after the
// images made are in place. By default nothing changes owner.
func WithOwner(uid, gid int) Option { return func(o *options) { o.owner = &owner{uid: uid, gid: gid} } }

// WithLogger sets the logger for what Prepare and Release create and remove.
func WithLogger(l logr.Logger) Option { return func(o *options) { o.log = l } }

package storage

import "github.com/go-logr/logr"

// Option changes how a Manager plans and prepares.
type Option func(*options)

type options struct {
	layout     Layout
	inspector  Inspector
	fsOverhead float64
	log        logr.Logger
	// root prefixes the paths of every read and write (WithRoot).
	root string
}

func newOptions(opts []Option) options {
	o := options{inspector: OSInspector{}, fsOverhead: DefaultFilesystemOverhead, log: logr.Discard()}
	for _, opt := range opts {
		opt(&o)
	}
	o.layout = o.layout.withDefaults()
	o.inspector = RootInspector(o.root, o.inspector)
	return o
}

// DefaultFilesystemOverhead is the share of a Filesystem claim kept free of
// disk.img for the file system's own use (CDI's default, 5.5%).
const DefaultFilesystemOverhead = 0.055

// WithLayout sets where the pod keeps volumes; empty fields keep KubeVirt's.
func WithLayout(l Layout) Option { return func(o *options) { o.layout = l } }

// WithInspector replaces the file system reader the planner uses.
func WithInspector(i Inspector) Option { return func(o *options) { o.inspector = i } }

// WithFilesystemOverhead sets the share (0 to <1) of a Filesystem claim that
// a newly created disk.img leaves free.
func WithFilesystemOverhead(f float64) Option { return func(o *options) { o.fsOverhead = f } }

// WithLogger sets the logger for what Prepare and Release create and remove.
func WithLogger(l logr.Logger) Option { return func(o *options) { o.log = l } }

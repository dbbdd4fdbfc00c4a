package importer

import (
	"os/exec"

	"github.com/go-logr/logr"
)

// Option changes how an Importer works.
type Option func(*options)

type options struct {
	qemuImg  string
	progress Progress
	log      logr.Logger
	runner   Runner
	xz       string
}

func newOptions(opts []Option) options {
	o := options{qemuImg: "qemu-img", log: logr.Discard(), runner: ExecRunner{}}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithQemuImg sets the qemu-img program: a path, or a name looked up in
// PATH when it runs (default "qemu-img"). qemu-img 5.0 or later.
func WithQemuImg(path string) Option { return func(o *options) { o.qemuImg = path } }

// WithProgress reports the bytes read from the source as they arrive.
func WithProgress(p Progress) Option { return func(o *options) { o.progress = p } }

// WithLogger sets the logger for the steps of an import.
func WithLogger(l logr.Logger) Option { return func(o *options) { o.log = l } }

// WithXZ decompresses xz with the xz program (a path, or a name looked up
// in PATH), in its own process, instead of the pure Go decoder, which is
// about half as fast. When the program cannot be found the Go decoder is
// used.
func WithXZ(path string) Option { return func(o *options) { o.xz = path } }

// WithRunner replaces how qemu-img is run (default ExecRunner).
func WithRunner(r Runner) Option { return func(o *options) { o.runner = r } }

// xzPath is the xz program to run, or "" for the Go decoder.
func (im *Importer) xzPath() string {
	if im.o.xz == "" {
		return ""
	}
	p, err := exec.LookPath(im.o.xz)
	if err != nil {
		im.o.log.V(1).Info("xz program not found: the Go decoder decompresses", "xz", im.o.xz)
		return ""
	}
	return p
}

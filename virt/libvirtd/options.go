package libvirtd

import "github.com/go-logr/logr"

// Option changes how [Start] runs a daemon.
type Option func(*options)

type options struct {
	log  logr.Logger
	env  []string
	user *Owner
}

// WithLogger sets the logger for start and stop events. The default discards.
func WithLogger(l logr.Logger) Option { return func(o *options) { o.log = l } }

// WithEnv adds KEY=VALUE entries to the daemon's environment (which otherwise
// is the caller's). Guests do not inherit it: libvirt gives QEMU a clean one.
func WithEnv(kv ...string) Option { return func(o *options) { o.env = append(o.env, kv...) } }

// WithUser starts the daemon as user o, for a root caller that runs it
// unprivileged (with Config.Session): the instance folder becomes o's. The
// default is the caller's own user.
func WithUser(o Owner) Option { return func(opts *options) { opts.user = &o } }

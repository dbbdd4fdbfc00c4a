package launcher

import (
	"time"

	"github.com/go-logr/logr"
)

// Option changes how [Run] behaves.
type Option func(*options)

type options struct {
	log  logr.Logger
	poll time.Duration
}

// WithLogger sets the logger. The default discards.
func WithLogger(l logr.Logger) Option { return func(o *options) { o.log = l } }

// WithPollInterval sets how often the launcher reads the domain's state
// (default 250 ms): the delay between the guest ending and the launcher
// noticing.
func WithPollInterval(d time.Duration) Option { return func(o *options) { o.poll = d } }

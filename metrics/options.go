package metrics

import (
	"time"

	"github.com/go-logr/logr"
)

// DefaultTimeout bounds the reads of one scrape of a collector: the reads of
// the controllers' cache, or all guests' statistics together (KubeVirt's
// virt-handler gives a scrape 10 s).
const DefaultTimeout = 10 * time.Second

// Option changes a collector.
type Option func(*options)

type options struct {
	timeout  time.Duration
	parallel int
	log      logr.Logger
}

func newOptions(opts []Option) options {
	o := options{timeout: DefaultTimeout, parallel: 8, log: logr.Discard()}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// WithTimeout bounds the reads of one scrape (default DefaultTimeout): a
// guest whose statistics do not come in time is left out of that scrape.
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// WithParallelism sets how many guests' statistics a scrape reads at once
// (default 8).
func WithParallelism(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.parallel = n
		}
	}
}

// WithLogger sets where a collector reports what it left out of a scrape
// (a guest that did not answer, a list that failed). The default discards.
func WithLogger(l logr.Logger) Option { return func(o *options) { o.log = l } }

package clientrate

import (
	"context"
	"sync"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/virtkit/virtkit/virt/clusterconfig"
)

// Limiter is a token bucket of a rate that can change. It implements
// client-go's flowcontrol.RateLimiter and is safe for concurrent use. A
// request waiting when the rate changes is let through at the old rate.
type Limiter struct {
	mu     sync.Mutex
	rate   clusterconfig.RateLimit
	bucket flowcontrol.RateLimiter
}

var _ flowcontrol.RateLimiter = (*Limiter)(nil)

// NewLimiter returns a Limiter at rate r.
func NewLimiter(r clusterconfig.RateLimit) *Limiter {
	return &Limiter{rate: r, bucket: flowcontrol.NewTokenBucketRateLimiter(r.QPS, r.Burst)}
}

// Rate is the rate now.
func (l *Limiter) Rate() clusterconfig.RateLimit {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rate
}

// Set changes the rate to r; it reports whether it changed.
func (l *Limiter) Set(r clusterconfig.RateLimit) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r == l.rate {
		return false
	}
	l.rate, l.bucket = r, flowcontrol.NewTokenBucketRateLimiter(r.QPS, r.Burst)
	return true
}

func (l *Limiter) current() flowcontrol.RateLimiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bucket
}

// TryAccept implements flowcontrol.RateLimiter.
func (l *Limiter) TryAccept() bool { return l.current().TryAccept() }

// Accept implements flowcontrol.RateLimiter.
func (l *Limiter) Accept() { l.current().Accept() }

// Stop implements flowcontrol.RateLimiter.
func (l *Limiter) Stop() { l.current().Stop() }

// QPS implements flowcontrol.RateLimiter.
func (l *Limiter) QPS() float32 { return l.current().QPS() }

// Wait implements flowcontrol.RateLimiter.
func (l *Limiter) Wait(ctx context.Context) error { return l.current().Wait(ctx) }

// Configure returns a copy of cfg whose clients all draw from l (its QPS
// and Burst then no longer apply).
func Configure(cfg *rest.Config, l *Limiter) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.RateLimiter = l
	c.QPS, c.Burst = l.Rate().QPS, l.Rate().Burst
	return c
}

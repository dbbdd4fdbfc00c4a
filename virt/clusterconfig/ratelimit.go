package clusterconfig

import virtv1 "kubevirt.io/api/core/v1"

// Client is a virtkit component whose client of the apiserver the KubeVirt
// CR rate-limits, each through a field of its own.
type Client string

// The clients the CR tunes, and the fields that tune them.
const (
	// ClientAPI is virt-api's: spec.configuration.apiConfiguration.
	ClientAPI Client = "virt-api"
	// ClientController is virt-controller's:
	// spec.configuration.controllerConfiguration.
	ClientController Client = "virt-controller"
	// ClientHandler is virt-handler's: spec.configuration.handlerConfiguration.
	ClientHandler Client = "virt-handler"
	// ClientWebhook is the admission webhooks' reads:
	// spec.configuration.webhookConfiguration.
	ClientWebhook Client = "virt-webhook"
)

// RateLimit is a client's token bucket: QPS requests per second on
// average, Burst at once.
type RateLimit struct {
	QPS   float32
	Burst int
}

// DefaultRateLimit is KubeVirt's default for c: 50 per second and bursts of
// 100 for virt-handler (one per node), 200 and 400 for the others.
func DefaultRateLimit(c Client) RateLimit {
	if c == ClientHandler {
		return RateLimit{QPS: 50, Burst: 100}
	}
	return RateLimit{QPS: 200, Burst: 400}
}

// ClientRateLimit is the rate c's client runs at under kv: the CR's
// restClient.rateLimiter.tokenBucketRateLimiter of c's field, a zero QPS or
// Burst there (or no CR, field or limiter) taking DefaultRateLimit's, as
// KubeVirt reads it.
func ClientRateLimit(kv *virtv1.KubeVirt, c Client) RateLimit {
	r := DefaultRateLimit(c)
	var comp *virtv1.ReloadableComponentConfiguration
	if cfg := Configuration(kv); cfg != nil {
		switch c {
		case ClientAPI:
			comp = cfg.APIConfiguration
		case ClientController:
			comp = cfg.ControllerConfiguration
		case ClientHandler:
			comp = cfg.HandlerConfiguration
		case ClientWebhook:
			comp = cfg.WebhookConfiguration
		}
	}
	if comp == nil || comp.RestClient == nil || comp.RestClient.RateLimiter == nil || comp.RestClient.RateLimiter.TokenBucketRateLimiter == nil {
		return r
	}
	tb := comp.RestClient.RateLimiter.TokenBucketRateLimiter
	if tb.QPS > 0 {
		r.QPS = tb.QPS
	}
	if tb.Burst > 0 {
		r.Burst = tb.Burst
	}
	return r
}

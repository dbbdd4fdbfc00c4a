package node

import (
	"time"

	"k8s.io/utils/clock"
)

// Option changes how a Provider (and so a Node) does its work.
type Option func(*options)

type options struct {
	runner     ProcessRunner
	network    Network
	images     ImageStore
	clock      clock.PassiveClock
	env        []string
	backoff    time.Duration
	maxBackoff time.Duration
	// csiDrivers are the CSI drivers' Node service sockets, by name.
	csiDrivers map[string]string
	// kubeletAPI, when set, is served (WithKubeletAPI).
	kubeletAPI *KubeletAPI
}

func defaultOptions() options {
	return options{clock: clock.RealClock{}, backoff: 2 * time.Second, maxBackoff: 2 * time.Minute}
}

// WithProcessRunner replaces the HostRunner that runs containers.
func WithProcessRunner(r ProcessRunner) Option { return func(o *options) { o.runner = r } }

// WithNetwork replaces the CNI network (and makes Config.CNIBinDir optional).
func WithNetwork(n Network) Option { return func(o *options) { o.network = n } }

// WithImageStore replaces the RegistryImageStore over Config.Registry and
// Config.ImageDir.
func WithImageStore(s ImageStore) Option { return func(o *options) { o.images = s } }

// WithClock sets the clock that stamps statuses.
func WithClock(c clock.PassiveClock) Option { return func(o *options) { o.clock = c } }

// WithEnv adds variables ("NAME=value") to every container's environment
// and the CNI plugins', e.g. a marker that lets tests find what they started.
func WithEnv(env ...string) Option { return func(o *options) { o.env = append(o.env, env...) } }

// WithRestartBackoff sets the pause before a container is restarted or a
// failed pod set-up (image, volume, network) is retried: initial, doubling
// up to max. Default 2 s up to 2 min.
func WithRestartBackoff(initial, max time.Duration) Option {
	return func(o *options) { o.backoff, o.maxBackoff = initial, max }
}

package provisioner

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"
)

// Option changes how [Run] runs.
type Option func(*options)

type options struct {
	log     logr.Logger
	resync  time.Duration
	workers int
}

// WithLogger sets the logger of the controller and of [Folders].
func WithLogger(l logr.Logger) Option { return func(o *options) { o.log = l } }

// WithResync sets how often every claim and volume is looked at again
// (default 1 minute).
func WithResync(d time.Duration) Option { return func(o *options) { o.resync = d } }

// Run provisions claims of classes whose provisioner is [Name] as folders
// under root until ctx ends, then waits for its workers. It fails at once
// only when root is not an absolute path. There is no leader
// election: one virt-local runs one provisioner.
func Run(ctx context.Context, cs kubernetes.Interface, root string, opts ...Option) error {
	o := options{log: logr.Discard(), resync: time.Minute, workers: 2}
	for _, opt := range opts {
		opt(&o)
	}
	f := &Folders{Root: root, Log: o.log}
	if _, err := f.folder("probe"); err != nil {
		return err
	}
	var wg sync.WaitGroup
	ctx = klog.NewContext(ctx, o.log)
	pc := controller.NewProvisionController(ctx, cs, Name, f,
		controller.LeaderElection(false),
		controller.ResyncPeriod(o.resync),
		controller.Threadiness(o.workers),
		controller.ExponentialBackOffOnError(true),
		controller.FailedProvisionThreshold(0),
		controller.FailedDeleteThreshold(0),
	)
	pc.ControllerWaitGroup(&wg)
	pc.Run(ctx)
	wg.Wait()
	return nil
}

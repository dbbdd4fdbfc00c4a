package virt

import (
	"github.com/go-logr/logr"

	"github.com/virtkit/virtkit/virt/domain"
	"github.com/virtkit/virtkit/virt/network"
	"github.com/virtkit/virtkit/virt/storage"
)

// Option sets one of a Machine's effects or facts.
type Option func(*Machine)

// WithDomainManager sets the hypervisor connection (required): a
// virt/domain/libvirt Manager on the launcher's socket, or virt/domain/fake.
// Any domain.Manager will do; the Machine uses only its Domains methods.
func WithDomainManager(m Domains) Option { return func(x *Machine) { x.dom = m } }

// WithStorage sets how volumes become disks (default: storage.New() with
// KubeVirt's launcher layout) and the facts about the pod's volumes.
func WithStorage(s storage.Interface, pod storage.Pod) Option {
	return func(x *Machine) { x.storage, x.pod = s, pod }
}

// WithNetwork sets the pod's network namespace handle. A VMI with
// interfaces needs one; without, Start fails naming the first interface.
func WithNetwork(c network.Configurator, opts ...network.PlanOption) Option {
	return func(x *Machine) { x.network, x.planOpts = c, opts }
}

// WithHost sets the host facts for conversion (emulation, CPU placement,
// launcher paths, ...). The Machine fills Host.Storage and Host.Network
// from its own plans.
func WithHost(h domain.Host) Option { return func(x *Machine) { x.host = h } }

// WithConvertOptions passes options to domain.Convert.
func WithConvertOptions(opts ...domain.Option) Option {
	return func(x *Machine) { x.convertOpts = append(x.convertOpts, opts...) }
}

// WithLogger sets the logger. The default discards.
func WithLogger(l logr.Logger) Option { return func(x *Machine) { x.log = l } }

// WithSteps replaces the start-up chain (see DefaultSteps): insert, remove
// or replace a step by name with the Steps methods on the chain
// DefaultSteps returns. New refuses a chain in which a step has no name or
// two share one.
func WithSteps(steps Steps) Option { return func(x *Machine) { x.steps = steps } }

// WithPlans gives the storage and network plans an earlier Start made (the
// Machine's StoragePlan and NetworkPlan, kept as JSON by a caller that
// restarts). Start and Adopt use them instead of planning again; a nil plan
// is made as usual.
func WithPlans(s storage.Plan, n network.Plan) Option {
	return func(x *Machine) {
		x.StoragePlan, x.NetworkPlan = s, n
		x.givenStorage, x.givenNetwork = s != nil, n != nil
	}
}

package spec

import (
	"k8s.io/apimachinery/pkg/api/resource"
	virtv1 "kubevirt.io/api/core/v1"
	instancetypev1beta1 "kubevirt.io/api/instancetype/v1beta1"
)

// Option adjusts how the package defaults and validates. Options replace the
// cluster-wide configuration object KubeVirt threads through its webhooks:
// every fact the functions need is passed in, nothing is read from globals.
type Option func(*config)

// config is the resolved set of options. It is built fresh on every call so
// no call can observe another's settings.
type config struct {
	arch                 string
	machineType          string
	emulatedMachines     []string
	cpuModel             string
	memoryOvercommit     int
	gracePeriodSeconds   int64
	instancetype         *instancetypev1beta1.VirtualMachineInstancetypeSpec
	preference           *instancetypev1beta1.VirtualMachinePreferenceSpec
	instancetypeResolved bool
	featureGates         map[string]bool
	liveUpdate           *LiveUpdate
}

// Architectures the package knows defaults for.
const (
	ArchAMD64 = "amd64"
	ArchARM64 = "arm64"
	ArchS390X = "s390x"
)

func newConfig(opts []Option) config {
	c := config{
		arch:               ArchAMD64,
		memoryOvercommit:   100,
		gracePeriodSeconds: virtv1.DefaultGracePeriodSeconds,
	}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return c
}

// WithArchitecture sets the architecture assumed for specs that do not name
// one (KubeVirt's cluster defaultArchitecture). Default "amd64".
func WithArchitecture(arch string) Option {
	return func(c *config) { c.arch = arch }
}

// WithDefaultMachineType sets the machine type given to specs without one.
// By default it depends on the architecture: q35 (amd64), virt (arm64),
// s390-ccw-virtio (s390x), as in KubeVirt.
func WithDefaultMachineType(machineType string) Option {
	return func(c *config) { c.machineType = machineType }
}

// WithEmulatedMachines sets the machine type patterns ("q35*") that validation
// accepts, as KubeVirt's emulatedMachines setting does. By default: q35* and
// pc-q35* (amd64), virt* (arm64), s390-ccw-virtio* (s390x).
func WithEmulatedMachines(patterns ...string) Option {
	return func(c *config) { c.emulatedMachines = append([]string(nil), patterns...) }
}

// WithCPUModel sets the CPU model given to specs without one. By default
// host-model on amd64 and s390x and host-passthrough on arm64, as in KubeVirt.
func WithCPUModel(model string) Option {
	return func(c *config) { c.cpuModel = model }
}

// WithMemoryOvercommit sets the percentage of guest memory that is requested
// from the scheduler when only guest memory is given (KubeVirt's
// memoryOvercommit, default 100: request == guest). Values below 10 are
// ignored.
func WithMemoryOvercommit(percent int) Option {
	return func(c *config) {
		if percent >= 10 {
			c.memoryOvercommit = percent
		}
	}
}

// WithTerminationGracePeriod sets the terminationGracePeriodSeconds given to
// VMIs without one. Default 30, KubeVirt's virtv1.DefaultGracePeriodSeconds
// (KubeVirt leaves the field empty and applies 30 at shutdown; virtkit writes
// the value so that the spec says what will happen).
func WithTerminationGracePeriod(seconds int64) Option {
	return func(c *config) {
		if seconds >= 0 {
			c.gracePeriodSeconds = seconds
		}
	}
}

// LiveUpdate are the limits of KubeVirt's liveUpdateConfiguration, within
// which DefaultVMI gives a VMI room to grow under the LiveUpdate rollout
// strategy (WithLiveUpdate).
type LiveUpdate struct {
	// MaxCPUSockets is the maxSockets of a VMI that sets none
	// (maxCpuSockets), or its sockets when it has more; 0: Ratio times its
	// sockets, at most 512 vCPUs.
	MaxCPUSockets uint32
	// MaxGuest is the maxGuest of a VMI that sets none (maxGuest); nil:
	// Ratio times its guest memory.
	MaxGuest *resource.Quantity
	// Ratio is maxHotplugRatio; 0 means KubeVirt's 4.
	Ratio uint32
}

// WithLiveUpdate makes DefaultVMI set maxSockets and, where memory hotplug
// is possible, maxGuest on VMIs that set neither, as KubeVirt's VMI
// webhook does when the cluster's vmRolloutStrategy is LiveUpdate: the
// VM's sockets and guest memory can then grow on a running VMI.
func WithLiveUpdate(l LiveUpdate) Option {
	return func(c *config) { c.liveUpdate = &l }
}

// WithInstancetype gives DefaultVM and ValidateVM the spec of the instancetype
// the VM's spec.instancetype matcher resolves to (see InstancetypeSpecFor).
// ValidateVM then validates the template as expanded by it, reporting
// conflicts, as KubeVirt's VM admission does. Without it, rules that the
// instancetype would satisfy (memory, CPU) are relaxed for VMs that name one.
func WithInstancetype(it *instancetypev1beta1.VirtualMachineInstancetypeSpec) Option {
	return func(c *config) { c.instancetype = it; c.instancetypeResolved = true }
}

// WithPreference is WithInstancetype for the VM's preference.
func WithPreference(pref *instancetypev1beta1.VirtualMachinePreferenceSpec) Option {
	return func(c *config) { c.preference = pref; c.instancetypeResolved = true }
}

func (c *config) effectiveArch(spec *virtv1.VirtualMachineInstanceSpec) string {
	if spec.Architecture != "" {
		return spec.Architecture
	}
	return c.arch
}

func (c *config) defaultMachineType(arch string) string {
	if c.machineType != "" {
		return c.machineType
	}
	switch arch {
	case ArchARM64:
		return "virt"
	case ArchS390X:
		return "s390-ccw-virtio"
	default:
		return "q35"
	}
}

func (c *config) machinePatterns(arch string) []string {
	if len(c.emulatedMachines) > 0 {
		return c.emulatedMachines
	}
	switch arch {
	case ArchARM64:
		return []string{"virt*"}
	case ArchS390X:
		return []string{"s390-ccw-virtio*"}
	default:
		return []string{"q35*", "pc-q35*"}
	}
}

func (c *config) defaultCPUModel(arch string) string {
	if c.cpuModel != "" {
		return c.cpuModel
	}
	if arch == ArchARM64 {
		return virtv1.CPUModeHostPassthrough
	}
	return virtv1.CPUModeHostModel
}

// Feature gates of KubeVirt's developerConfiguration.featureGates that
// validation checks.
const (
	// FeatureGateHostDisk allows hostDisk volumes, which reach the node's
	// file system.
	FeatureGateHostDisk = "HostDisk"
)

// WithFeatureGates sets the cluster's enabled feature gates (KubeVirt's
// spec.configuration.developerConfiguration.featureGates). Default none:
// what a gate guards is refused.
func WithFeatureGates(gates ...string) Option {
	return func(c *config) {
		c.featureGates = map[string]bool{}
		for _, g := range gates {
			c.featureGates[g] = true
		}
	}
}

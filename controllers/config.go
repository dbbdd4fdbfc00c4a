package controllers

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/controllers/export"
	"github.com/virtkit/virtkit/controllers/nodehealth"
	"github.com/virtkit/virtkit/controllers/snapshot"
	"github.com/virtkit/virtkit/controllers/vm"
	"github.com/virtkit/virtkit/controllers/vmi"
	"github.com/virtkit/virtkit/virt/clusterconfig"
	"github.com/virtkit/virtkit/virt/spec"
)

// Config is what the controllers take from the cluster's KubeVirt CR and
// from the daemon's flags. It is plain data; Live reads the CR again
// each time it is needed.
type Config struct {
	// Emulation runs guests under software emulation (KubeVirt's
	// spec.configuration.developerConfiguration.useEmulation): launcher pods
	// then ask for no /dev/kvm and carry TCG's memory overhead.
	Emulation bool
	// LauncherImage is the image launcher pods run.
	LauncherImage string
	// Freezer freezes a running guest's file systems for an online
	// snapshot (the freeze and unfreeze subresources, as KubeVirt's
	// snapshot controller calls them); nil: snapshots do not freeze. Not in
	// the KubeVirt CR.
	Freezer snapshot.Freezer
	// ImporterImage is the image DataVolume importer pods run
	// (virt-importer); empty: the DataVolume controller does not run. Not in
	// the KubeVirt CR.
	ImporterImage string
	// ExportServerImage is the image VirtualMachineExport server pods run
	// (virt-exportserver); with ExportSigner, the export controller runs.
	// Not in the KubeVirt CR.
	ExportServerImage string
	// ExportSigner signs export servers' certificates.
	ExportSigner export.Signer
	// ExportProxyHost is where users reach the export proxy (host:port),
	// and ExportProxyCA (PEM) what its certificate is checked against:
	// with them, exports list external links. Not in the KubeVirt CR.
	ExportProxyHost string
	ExportProxyCA   []byte
	// UploadClientCA is the CA (PEM) of the upload proxy's client
	// certificate, which upload pods require; nil: DataVolumes with an
	// upload source wait, saying uploads are not configured.
	UploadClientCA []byte
	// UploadClientName is the common name of that certificate.
	UploadClientName string
	// UploadProxyURL is where users reach virt-api's upload proxy, which
	// the CDIConfig's status tells them (and KubeVirt's virtctl
	// image-upload reads); empty: unknown. Not in the KubeVirt CR.
	UploadProxyURL string
	// LauncherCapabilitiesCache is the node folder launchers share for
	// libvirt's QEMU capability probe (vmi.PodOptions.CapabilitiesCache);
	// empty: none. Not in the KubeVirt CR.
	LauncherCapabilitiesCache string
	// ImagePullPolicy is the launcher container's pull policy (imagePullPolicy).
	ImagePullPolicy corev1.PullPolicy
	// CPUModel is the guest CPU model of specs without one (cpuModel).
	CPUModel string
	// MachineType is the machine type of specs without one
	// (architectureConfiguration.amd64.machineType, or the deprecated machineType).
	MachineType string
	// EmulatedMachines are the machine type patterns validation accepts
	// (architectureConfiguration.amd64.emulatedMachines, or the deprecated emulatedMachines).
	EmulatedMachines []string
	// MemoryOvercommit is the percentage of guest memory requested from the
	// scheduler (developerConfiguration.memoryOvercommit); 0 means 100.
	MemoryOvercommit int
	// CPUAllocationRatio is vCPUs per requested CPU
	// (developerConfiguration.cpuAllocationRatio); 0 means 10.
	CPUAllocationRatio int
	// CPURequest is the CPU request of launchers whose VMI asks for none (cpuRequest).
	CPURequest *resource.Quantity
	// NodeSelector is added to every launcher pod (developerConfiguration.nodeSelectors).
	NodeSelector map[string]string
	// VMRolloutStrategy is how template changes reach a running VMI
	// (vmRolloutStrategy); empty means KubeVirt's default, LiveUpdate.
	VMRolloutStrategy virtv1.VMRolloutStrategy
	// LiveUpdate are the limits within which VMIs get room to grow under
	// the LiveUpdate strategy (liveUpdateConfiguration).
	LiveUpdate spec.LiveUpdate
	// RuntimeClassName is given to launcher pods (defaultRuntimeClass).
	RuntimeClassName string
	// VMStateStorageClass is the storage class of VMs' backend-storage
	// claims (vmStateStorageClass); empty: the default class for VMs, else
	// the cluster's.
	VMStateStorageClass string
	// FeatureGates are the enabled feature gates
	// (developerConfiguration.featureGates); validation checks those of
	// virt/spec (HostDisk).
	FeatureGates []string
	// KubeVirtNamespace is where the KubeVirt CR lives, whose
	// spec.configuration.migrations the migration controller reads at each
	// migration's start; empty: clusterconfig.DefaultNamespace. Not in the
	// KubeVirt CR.
	KubeVirtNamespace string
	// NodeHealth are the node controller's timings (controllers/nodehealth:
	// heartbeat timeout, not-ready grace); zero fields are KubeVirt's
	// defaults. Not in the KubeVirt CR.
	NodeHealth nodehealth.Options
}

// FromKubeVirt returns base with the settings of kv that virtkit honours
// applied over it. Settings kv leaves empty keep base's value. Settings
// virtkit does not implement are ignored; docs/controllers/config.md lists
// the ones honoured.
func FromKubeVirt(kv *virtv1.KubeVirt, base Config) Config {
	if kv == nil {
		return base
	}
	c := kv.Spec.Configuration
	if clusterconfig.UseEmulation(kv) {
		base.Emulation = true
	}
	if dc := c.DeveloperConfiguration; dc != nil {
		setIf(&base.MemoryOvercommit, dc.MemoryOvercommit)
		setIf(&base.CPUAllocationRatio, dc.CPUAllocationRatio)
		if len(dc.NodeSelectors) > 0 {
			base.NodeSelector = dc.NodeSelectors
		}
		if len(dc.FeatureGates) > 0 {
			base.FeatureGates = dc.FeatureGates
		}
	}
	setIf(&base.ImagePullPolicy, c.ImagePullPolicy)
	setIf(&base.CPUModel, c.CPUModel)
	setIf(&base.MachineType, c.MachineType)
	if len(c.EmulatedMachines) > 0 {
		base.EmulatedMachines = c.EmulatedMachines
	}
	if ac := c.ArchitectureConfiguration; ac != nil && ac.Amd64 != nil {
		setIf(&base.MachineType, ac.Amd64.MachineType)
		if len(ac.Amd64.EmulatedMachines) > 0 {
			base.EmulatedMachines = ac.Amd64.EmulatedMachines
		}
	}
	if c.CPURequest != nil {
		q := c.CPURequest.DeepCopy()
		base.CPURequest = &q
	}
	setIf(&base.RuntimeClassName, c.DefaultRuntimeClass)
	setIf(&base.VMStateStorageClass, c.VMStateStorageClass)
	if c.VMRolloutStrategy != nil {
		base.VMRolloutStrategy = *c.VMRolloutStrategy
	}
	if lu := c.LiveUpdateConfiguration; lu != nil {
		setIf(&base.LiveUpdate.Ratio, lu.MaxHotplugRatio)
		if lu.MaxCpuSockets != nil {
			base.LiveUpdate.MaxCPUSockets = *lu.MaxCpuSockets
		}
		if lu.MaxGuest != nil {
			q := lu.MaxGuest.DeepCopy()
			base.LiveUpdate.MaxGuest = &q
		}
	}
	return base
}

func setIf[T comparable](dst *T, v T) {
	var zero T
	if v != zero {
		*dst = v
	}
}

// SpecOptions are the virt/spec defaulting and validation options cfg
// implies; the VM controller and virt-api's webhooks use them.
func (cfg Config) SpecOptions() []spec.Option {
	var opts []spec.Option
	if cfg.MachineType != "" {
		opts = append(opts, spec.WithDefaultMachineType(cfg.MachineType))
	}
	if len(cfg.EmulatedMachines) > 0 {
		opts = append(opts, spec.WithEmulatedMachines(cfg.EmulatedMachines...))
	}
	if cfg.CPUModel != "" {
		opts = append(opts, spec.WithCPUModel(cfg.CPUModel))
	}
	if cfg.MemoryOvercommit != 0 {
		opts = append(opts, spec.WithMemoryOvercommit(cfg.MemoryOvercommit))
	}
	if len(cfg.FeatureGates) > 0 {
		opts = append(opts, spec.WithFeatureGates(cfg.FeatureGates...))
	}
	if cfg.Rollout().LiveUpdate {
		opts = append(opts, spec.WithLiveUpdate(cfg.LiveUpdate))
	}
	return opts
}

// Rollout is how the VM controller carries template changes over to
// running VMIs under cfg.
func (cfg Config) Rollout() vm.Rollout {
	return vm.Rollout{LiveUpdate: cfg.VMRolloutStrategy != virtv1.VMRolloutStrategyStage, CPUAllocationRatio: cfg.CPUAllocationRatio}
}

// PodOptions are the launcher pod rendering options cfg implies.
func (cfg Config) PodOptions() vmi.PodOptions {
	return vmi.PodOptions{
		LauncherImage:      cfg.LauncherImage,
		LauncherPullPolicy: cfg.ImagePullPolicy,
		Emulation:          cfg.Emulation,
		CPUAllocationRatio: cfg.CPUAllocationRatio,
		CPURequest:         cfg.CPURequest,
		NodeSelector:       cfg.NodeSelector,
		RuntimeClassName:   cfg.RuntimeClassName,
		CapabilitiesCache:  cfg.LauncherCapabilitiesCache,
		StateStorageClass:  cfg.VMStateStorageClass,
	}
}

// ReadConfig reads the KubeVirt CR of namespace ("" is
// clusterconfig.DefaultNamespace) and applies it to base. No CR leaves base
// as it is; more than one is an error (clusterconfig.ErrSeveral), as in
// KubeVirt, which honours a single installation per cluster.
func ReadConfig(ctx context.Context, r client.Reader, namespace string, base Config) (Config, error) {
	kv, err := clusterconfig.Get(ctx, r, namespace)
	if err != nil {
		return base, err
	}
	return FromKubeVirt(kv, base), nil
}

// LiveSpecOptions returns the virt/spec options of the settings in force
// when it is called (Live): what the VM controller and the webhooks default
// and validate with, so that a change of the KubeVirt CR (a feature gate,
// a machine type) reaches them without a restart.
func LiveSpecOptions(r client.Reader, base Config) func(ctx context.Context) ([]spec.Option, error) {
	live := Live(r, base)
	return func(ctx context.Context) ([]spec.Option, error) {
		cfg, err := live(ctx)
		return cfg.SpecOptions(), err
	}
}

// Live returns a reader of the settings in force when it is called: base
// with the KubeVirt CR of base.KubeVirtNamespace, as r reads it then,
// applied (ReadConfig). Give it an uncached reader (the manager's API
// reader), so that what is created just after a change of the CR sees the
// change.
func Live(r client.Reader, base Config) func(ctx context.Context) (Config, error) {
	return func(ctx context.Context) (Config, error) {
		return ReadConfig(ctx, r, base.KubeVirtNamespace, base)
	}
}

package vmi

import (
	"errors"
	"fmt"
	"path"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/launcher/contract"
	"github.com/virtkit/virtkit/virt/network"
	"github.com/virtkit/virtkit/virt/spec"
	"github.com/virtkit/virtkit/virt/storage"
	"github.com/virtkit/virtkit/virt/storage/backendstorage"
)

// ErrInvalidVMI is returned (wrapped, with the field) when a VMI cannot be
// rendered into a pod.
var ErrInvalidVMI = errors.New("invalid VirtualMachineInstance")

// Labels, resources and paths of launcher pods.
const (
	// LauncherLabelValue is the value of the kubevirt.io label on launcher pods.
	LauncherLabelValue = "virt-launcher"
	// ComputeContainer is the name of the launcher's container.
	ComputeContainer = "compute"
	// KVMResource, TunResource and VhostNetResource are the device plugin
	// resources of /dev/kvm, /dev/net/tun and /dev/vhost-net.
	KVMResource      corev1.ResourceName = contract.KVMResource
	TunResource      corev1.ResourceName = contract.TunResource
	VhostNetResource corev1.ResourceName = contract.VhostNetResource
	// PodRunDir is the folder in the pod under which each VMI's folder,
	// PodRunDir/<vmi uid>, is shared with the node's handler (launcher.Layout.Root).
	PodRunDir = contract.PodRunDir
	// GracePeriodMargin is added to the VMI's termination grace period for
	// the pod's, as KubeVirt does: the launcher must outlive the guest's shutdown.
	GracePeriodMargin = 15
	// DefaultGracePeriod is used when a VMI sets none (KubeVirt's default).
	DefaultGracePeriod = 30
	// CPUAllocationRatio is KubeVirt's default: a vCPU requests 1/10 of a CPU.
	CPUAllocationRatio = 10

	// runVolume is the pod's folder, an emptyDir the node's handler finds
	// by the pod's UID (contract.PodFolder).
	runVolume = contract.RunVolume
	// cacheVolume is the node's shared libvirt capability cache
	// (PodOptions.CapabilitiesCache), at cachePath in the pod.
	cacheVolume = "virtkit-libvirt-cache"
	cachePath   = contract.CapabilitiesCachePath
	// configVolume is the launcher's libvirtd's configuration and guest
	// state, an emptyDir at configPath, short enough for the sockets
	// libvirt makes below it (as KubeVirt's libvirt-runtime volume).
	configVolume = "virtkit-libvirt"
	configPath   = contract.LibvirtConfigDir
	// containerDiskPath holds each containerDisk image volume at
	// containerDiskPath/<volume> (virt/storage Layout.ContainerDisksDir,
	// where the handler looks for the disk file).
	containerDiskPath = "/var/run/kubevirt/container-disks"
	privatePath       = "/var/run/kubevirt-private"
)

// PodOptions are the cluster facts a launcher pod is rendered with.
type PodOptions struct {
	// LauncherImage is the image that runs virt-launcher (required).
	LauncherImage string
	// LauncherPullPolicy is the compute container's image pull policy.
	LauncherPullPolicy corev1.PullPolicy
	// Emulation selects software emulation (TCG): no /dev/kvm is requested
	// and QEMU's overhead is TCG's. KubeVirt's useEmulation.
	Emulation bool
	// CPUAllocationRatio: a vCPU without an explicit CPU request asks the
	// scheduler for 1/CPUAllocationRatio of a CPU (KubeVirt's
	// developerConfiguration.cpuAllocationRatio). Zero means the default, 10.
	CPUAllocationRatio int
	// CPURequest, when set, is the CPU request of a launcher whose VMI asks
	// for none, instead of the ratio (KubeVirt's cpuRequest).
	CPURequest *resource.Quantity
	// NodeSelector is added to every launcher pod's node selector (KubeVirt's
	// developerConfiguration.nodeSelectors); the VMI's own entries win.
	NodeSelector map[string]string
	// RuntimeClassName is given to launcher pods (KubeVirt's defaultRuntimeClass).
	RuntimeClassName string
	// CapabilitiesCache is a node folder every launcher's libvirtd shares
	// for its probe of QEMU's capabilities (virt-launcher
	// --libvirt-cache-dir). Empty: each launcher probes on its own, which
	// costs about 1.8 s of every guest's start under software emulation.
	// Launchers on a node can then write what the others read; set it
	// where they trust each other (virt-local does).
	CapabilitiesCache string
	// StateStorageClass is the storage class of new backend-storage
	// claims (the KubeVirt CR's vmStateStorageClass); empty: the default
	// class for VMs, else the cluster's (backendstorage.Class).
	StateStorageClass string
	// StateClaim is the VMI's backend-storage claim
	// (virt/storage/backendstorage), which the VMI controller sets for
	// the pod at hand; required for a VMI that needs one.
	StateClaim string
	// BlockVolumes names the VMI's persistentVolumeClaim and dataVolume
	// volumes whose claims are in Block mode (BlockVolumes reads them):
	// the pod has them as devices, not mounts.
	BlockVolumes map[string]bool
	// Suffix returns the random part of the pod name; the default is 5
	// characters from k8s.io/apimachinery/pkg/util/rand.
	Suffix func() string
}

// RunDir is the VMI's folder inside its launcher pod (launcher.Layout.Root).
// A VMI UID is 36 bytes, so libvirt's socket, RunDir/libvirt/run/libvirt-sock,
// is 78 bytes in the pod, well under the 107-byte limit of unix socket
// paths. On the node the folder is the pod's emptyDir (PodFolder), whose
// longer path the handler reaches through a handle, not by name.
func RunDir(vmi *virtv1.VirtualMachineInstance) string { return path.Join(PodRunDir, string(vmi.UID)) }

// PodFolder is the node folder of the launcher pod pod, under the node's
// kubelet pods folder podsDir (contract.PodsDir on a kubelet's node).
func PodFolder(podsDir string, pod *corev1.Pod) string { return contract.PodFolder(podsDir, pod.UID) }

// RenderPod returns the launcher pod of vmi. It is pure: the same VMI,
// options and suffix give the same pod.
//
// The compute container requests the guest's memory plus MemoryOverhead
// (docs/performance.md, "Overhead the controller requests per launcher pod"),
// and limits it likewise when the VMI sets a memory limit.
func RenderPod(vmi *virtv1.VirtualMachineInstance, opts PodOptions) (*corev1.Pod, error) {
	if vmi.UID == "" {
		return nil, fmt.Errorf("%w: metadata.uid: must be set", ErrInvalidVMI)
	}
	if opts.LauncherImage == "" {
		return nil, errors.New("vmi: PodOptions.LauncherImage must be set")
	}
	res, err := computeResources(vmi, opts)
	if err != nil {
		return nil, fmt.Errorf("VirtualMachineInstance %s/%s: %w", vmi.Namespace, vmi.Name, err)
	}
	vols, mounts, devices, sa, err := podVolumes(vmi, opts.BlockVolumes)
	if err != nil {
		return nil, fmt.Errorf("VirtualMachineInstance %s/%s: %w", vmi.Namespace, vmi.Name, err)
	}
	suffix := opts.Suffix
	if suffix == nil {
		suffix = func() string { return utilrand.String(5) }
	}
	grace := int64(DefaultGracePeriod)
	if vmi.Spec.TerminationGracePeriodSeconds != nil {
		grace = *vmi.Spec.TerminationGracePeriodSeconds
	}
	podGrace := grace + GracePeriodMargin
	dir := RunDir(vmi)

	// The VMI's labels but those that say which VMI, node or migration a
	// pod belongs to: only the lines below and a migration's set those.
	labels := map[string]string{}
	for k, v := range vmi.Labels {
		if !spec.ReservedLabel(k) && k != virtv1.MigrationSelectorLabel {
			labels[k] = v
		}
	}
	labels[virtv1.AppLabel] = LauncherLabelValue
	labels[virtv1.CreatedByLabel] = string(vmi.UID)
	labels[virtv1.DeprecatedVirtualMachineNameLabel] = vmi.Name
	labels[virtv1.VirtualMachineInstanceIDLabel] = spec.InstanceID(vmi.Name)

	nodeSelector := map[string]string{}
	for k, v := range opts.NodeSelector {
		nodeSelector[k] = v
	}
	for k, v := range vmi.Spec.NodeSelector {
		nodeSelector[k] = v
	}
	nodeSelector[virtv1.NodeSchedulable] = "true"

	hostname := vmi.Spec.Hostname
	if hostname == "" {
		hostname = vmi.Name // KubeVirt names the guest's host after the VMI
	}
	yes := true
	var runtimeClass *string
	if opts.RuntimeClassName != "" {
		runtimeClass = &opts.RuntimeClassName
	}
	// The pod's folder is its own: an emptyDir, not a node folder a
	// hostPath would give it (and every pod that names the same path).
	// The hotplug folder receives the images the handler binds in from
	// attachment pods while the pod runs: HostToContainer, as KubeVirt's.
	toContainer := corev1.MountPropagationHostToContainer
	vols = append([]corev1.Volume{
		{Name: runVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: configVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: contract.HotplugVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}, vols...)
	mounts = append([]corev1.VolumeMount{{Name: runVolume, MountPath: dir}, {Name: configVolume, MountPath: configPath},
		{Name: contract.HotplugVolume, MountPath: storage.DefaultLayout().HotplugDir, MountPropagation: &toContainer}}, mounts...)
	command := []string{contract.Binary,
		"--" + contract.FlagDir, dir,
		"--" + contract.FlagLibvirtConfigDir, configPath,
		"--" + contract.FlagNamespace, vmi.Namespace,
		"--" + contract.FlagName, vmi.Name,
		"--" + contract.FlagGracePeriod, strconv.FormatInt(grace, 10) + "s",
	}
	annotations := map[string]string{virtv1.DomainAnnotation: vmi.Name}
	// The secondary networks, for the cluster's Multus (virt-local's nodes
	// read it as Multus does).
	if multus := network.MultusNetworks(vmi); multus != "" {
		annotations[network.MultusNetworksAnnotation] = multus
	}
	stVols, stMounts, err := stateMounts(vmi, opts.StateClaim)
	if err != nil {
		return nil, fmt.Errorf("VirtualMachineInstance %s/%s: %w", vmi.Namespace, vmi.Name, err)
	}
	vols, mounts = append(vols, stVols...), append(mounts, stMounts...)
	readiness, liveness := computeProbes(vmi, dir)
	hpVols, hpMounts := hugepagesMount(vmi)
	vols, mounts = append(vols, hpVols...), append(mounts, hpMounts...)
	if opts.CapabilitiesCache != "" {
		dirType := corev1.HostPathDirectoryOrCreate
		vols = append(vols, corev1.Volume{Name: cacheVolume, VolumeSource: corev1.VolumeSource{
			HostPath: &corev1.HostPathVolumeSource{Path: opts.CapabilitiesCache, Type: &dirType}}})
		mounts = append(mounts, corev1.VolumeMount{Name: cacheVolume, MountPath: cachePath})
		command = append(command, "--"+contract.FlagLibvirtCacheDir, cachePath)
	}

	pod := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        "virt-launcher-" + vmi.Name + "-" + suffix(),
			Namespace:   vmi.Namespace,
			Labels:      labels,
			Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: virtv1.SchemeGroupVersion.String(), Kind: "VirtualMachineInstance",
				Name: vmi.Name, UID: vmi.UID, Controller: &yes, BlockOwnerDeletion: &yes,
			}},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &podGrace,
			AutomountServiceAccountToken:  &sa.automount,
			ServiceAccountName:            sa.name,
			NodeSelector:                  nodeSelector,
			Affinity:                      vmi.Spec.Affinity.DeepCopy(),
			Tolerations:                   append([]corev1.Toleration(nil), vmi.Spec.Tolerations...),
			TopologySpreadConstraints:     append([]corev1.TopologySpreadConstraint(nil), vmi.Spec.TopologySpreadConstraints...),
			SchedulerName:                 vmi.Spec.SchedulerName,
			RuntimeClassName:              runtimeClass,
			PriorityClassName:             vmi.Spec.PriorityClassName,
			DNSPolicy:                     vmi.Spec.DNSPolicy,
			DNSConfig:                     vmi.Spec.DNSConfig.DeepCopy(),
			Hostname:                      hostname,
			// The sandbox's init (pause) is then the pod's PID 1 and reaps
			// what libvirtd leaves: it double-forks QEMU (the capability
			// probe's too), whose orphans would otherwise stay zombies under
			// virt-launcher, and libvirt waits for a zombie to go.
			ShareProcessNamespace: &yes,
			Subdomain:             vmi.Spec.Subdomain,
			SecurityContext:       podSecurity(),
			Volumes:               vols,
			Containers: []corev1.Container{{
				Name:                   ComputeContainer,
				Image:                  opts.LauncherImage,
				ImagePullPolicy:        opts.LauncherPullPolicy,
				Command:                command,
				Resources:              res,
				VolumeMounts:           mounts,
				VolumeDevices:          devices,
				ReadinessProbe:         readiness,
				LivenessProbe:          liveness,
				SecurityContext:        computeSecurity(),
				TerminationMessagePath: corev1.TerminationMessagePathDefault,
				// The launcher writes its exit reason there; a launcher that
				// could not write it still leaves its last log lines.
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			}},
		},
	}
	sizeAnnotations(pod, vmi)
	return pod, nil
}

// computeResources returns the compute container's requests and limits.
func computeResources(vmi *virtv1.VirtualMachineInstance, opts PodOptions) (corev1.ResourceRequirements, error) {
	emulation := opts.Emulation
	guest, err := GuestMemory(vmi)
	if err != nil {
		return corev1.ResourceRequirements{}, err
	}
	vcpus := VCPUs(vmi)
	overhead := MemoryOverhead(guest, vcpus, emulation)
	vr := vmi.Spec.Domain.Resources
	req, lim := corev1.ResourceList{}, corev1.ResourceList{}

	mem := guest.DeepCopy()
	if q, ok := vr.Requests[corev1.ResourceMemory]; ok {
		mem = q.DeepCopy()
	}
	mem.Add(overhead)
	req[corev1.ResourceMemory] = mem
	if q, ok := vr.Limits[corev1.ResourceMemory]; ok {
		l := q.DeepCopy()
		l.Add(overhead)
		lim[corev1.ResourceMemory] = l
	}

	ratio := int64(opts.CPUAllocationRatio)
	if ratio <= 0 {
		ratio = CPUAllocationRatio
	}
	switch q, ok := vr.Requests[corev1.ResourceCPU]; {
	case ok:
		req[corev1.ResourceCPU] = q.DeepCopy()
	case opts.CPURequest != nil:
		req[corev1.ResourceCPU] = opts.CPURequest.DeepCopy()
	default:
		req[corev1.ResourceCPU] = *resource.NewMilliQuantity(vcpus*1000/ratio, resource.DecimalSI)
	}
	if q, ok := vr.Limits[corev1.ResourceCPU]; ok {
		lim[corev1.ResourceCPU] = q.DeepCopy()
	}
	if err := placeResources(vmi, guest, overhead, req, lim); err != nil {
		return corev1.ResourceRequirements{}, err
	}
	// Devices come from virt-handler's device plugins, as in KubeVirt: a
	// container of a real node sees no /dev/kvm or /dev/net/tun otherwise.
	one := *resource.NewQuantity(1, resource.DecimalSI)
	device := func(name corev1.ResourceName) { req[name], lim[name] = one.DeepCopy(), one.DeepCopy() }
	if !emulation {
		device(KVMResource)
	}
	if len(vmi.Spec.Domain.Devices.Interfaces) > 0 {
		device(TunResource)
		if !emulation && virtioNIC(vmi) {
			device(VhostNetResource)
		}
	}
	if len(lim) == 0 {
		lim = nil
	}
	return corev1.ResourceRequirements{Requests: req, Limits: lim}, nil
}

// virtioNIC reports whether a NIC of vmi is virtio-net (the default model).
func virtioNIC(vmi *virtv1.VirtualMachineInstance) bool {
	for _, i := range vmi.Spec.Domain.Devices.Interfaces {
		if i.Model == "" || i.Model == virtv1.VirtIO {
			return true
		}
	}
	return false
}

// stateVolume is the launcher pod's volume of the VMI's backend-storage
// claim, as KubeVirt names it.
const stateVolume = "vm-state"

// stateMounts are the volume of the backend-storage claim of a VMI that
// needs one, and its folders mounted where the launcher's libvirt keeps
// that state (below the configuration folder, so after its mount): the
// vTPM's state and local CA for a persistent TPM, the EFI variable stores
// for persistent EFI.
func stateMounts(vmi *virtv1.VirtualMachineInstance, claim string) ([]corev1.Volume, []corev1.VolumeMount, error) {
	if !backendstorage.Needed(&vmi.Spec) {
		return nil, nil, nil
	}
	if claim == "" {
		return nil, nil, errors.New("its backend-storage claim is not known yet")
	}
	vols := []corev1.Volume{{Name: stateVolume, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}
	// The folders between the configuration folder and the mounts below
	// it are emptyDirs of their own, as in KubeVirt: a runtime would make
	// them root's, and the launcher's libvirt, which is not root, writes
	// in them.
	qemu := path.Dir(contract.SwtpmDir)
	var mounts []corev1.VolumeMount
	for _, d := range []struct{ name, path string }{{stateVolume + "-libvirt", path.Dir(qemu)}, {stateVolume + "-libvirt-qemu", qemu}} {
		vols = append(vols, corev1.Volume{Name: d.name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		mounts = append(mounts, corev1.VolumeMount{Name: d.name, MountPath: d.path})
	}
	if backendstorage.PersistentTPM(&vmi.Spec) {
		mounts = append(mounts,
			corev1.VolumeMount{Name: stateVolume, MountPath: contract.SwtpmDir, SubPath: backendstorage.SubPathTPM},
			corev1.VolumeMount{Name: stateVolume, MountPath: contract.SwtpmLocalCADir, SubPath: backendstorage.SubPathTPMCA})
	}
	if backendstorage.PersistentEFI(&vmi.Spec) {
		mounts = append(mounts, corev1.VolumeMount{Name: stateVolume, MountPath: contract.NVRAMDir, SubPath: backendstorage.SubPathNVRAM})
	}
	return vols, mounts, nil
}

// StateClaimOf is the backend-storage claim launcher pod pod mounts, ""
// when none.
func StateClaimOf(pod *corev1.Pod) string {
	for _, v := range pod.Spec.Volumes {
		if v.Name == stateVolume && v.PersistentVolumeClaim != nil {
			return v.PersistentVolumeClaim.ClaimName
		}
	}
	return ""
}

// computeSecurity is the compute container's security context: it runs as
// KubeVirt's qemu user and group (107), as KubeVirt's non-root launcher
// does, and so does everything it starts. The launcher then runs its
// libvirtd in libvirt's session mode, which needs no privilege: no mount
// namespace, no change of user or owner; QEMU opens the tap and the
// images the handler gave to that user. It holds no capability, cannot gain
// any (no_new_privs), is not privileged and runs under the runtime's
// default seccomp filter.
func computeSecurity() *corev1.SecurityContext {
	no, yes := false, true
	user, group := int64(contract.QEMUUser), int64(contract.QEMUGroup)
	return &corev1.SecurityContext{
		RunAsUser:                &user,
		RunAsGroup:               &group,
		RunAsNonRoot:             &yes,
		Privileged:               &no,
		AllowPrivilegeEscalation: &no,
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// podSecurity is the launcher pod's security context: the qemu group is
// its fsGroup, so that the volumes the kubelet sets ownership of (the
// launcher folder's emptyDir among them) are writable by the launcher.
func podSecurity() *corev1.PodSecurityContext {
	group := int64(contract.QEMUGroup)
	return &corev1.PodSecurityContext{FSGroup: &group}
}

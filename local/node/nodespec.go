package node

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/devices"
)

// KubeletVersion is the version the node reports: the control plane's.
const KubeletVersion = "v1.37.2"

// hostFacts are the host's figures a node reports.
type hostFacts struct {
	CPUs                 int
	MemoryBytes          int64
	DiskBytes            int64
	Kernel, OSImage      string
	Arch, HostIP         string
	MachineID, BootID    string
	ContainerRuntimeName string
}

// readHostFacts reads the host's figures; dir is the folder whose file
// system bounds ephemeral storage.
func readHostFacts(dir, hostIP string) hostFacts {
	h := hostFacts{CPUs: runtime.NumCPU(), Arch: runtime.GOARCH, HostIP: hostIP, OSImage: "Linux"}
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if fields := strings.Fields(sc.Text()); len(fields) >= 2 && fields[0] == "MemTotal:" {
				kb, _ := strconv.ParseInt(fields[1], 10, 64)
				h.MemoryBytes = kb * 1024
			}
		}
		f.Close()
	}
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) == nil {
		h.DiskBytes = int64(st.Blocks) * st.Bsize
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		h.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
				h.OSImage = strings.Trim(v, `"`)
			}
		}
	}
	if b, err := os.ReadFile("/etc/machine-id"); err == nil {
		h.MachineID = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
		h.BootID = strings.TrimSpace(string(b))
	}
	return h
}

// nodeObject is the Node the node registers: the host's capacity (or
// Config.Capacity's), the labels launcher pods select, Ready, its address.
func nodeObject(cfg Config, h hostFacts) *corev1.Node {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(int64(h.CPUs), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(h.MemoryBytes, resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(110, resource.DecimalSI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(h.DiskBytes, resource.BinarySI),
	}
	// Launcher pods ask for the devices of virt-handler's device plugins;
	// a process uses the host's /dev/net/tun and /dev/vhost-net directly,
	// so the node offers those the host has. KVM is not offered: these
	// nodes run guests under emulation only.
	for _, d := range devices.ForNode(devices.NodeFacts{KVMOff: true}) {
		if _, err := os.Stat(d.Path); err == nil {
			capacity[corev1.ResourceName(d.Resource)] = *resource.NewQuantity(int64(d.Count), resource.DecimalSI)
		}
	}
	for k, v := range cfg.Capacity {
		capacity[k] = v.DeepCopy()
	}
	labels := map[string]string{
		corev1.LabelHostname:    cfg.Name,
		corev1.LabelOSStable:    "linux",
		corev1.LabelArchStable:  h.Arch,
		"type":                  "virtual-kubelet",
		"node.virtkit.io/local": "true",
		virtv1.NodeSchedulable:  "true",
	}
	for k, v := range cfg.Labels {
		labels[k] = v
	}
	now := metav1.Now()
	cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s, Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: now}
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: cfg.Name, Labels: labels},
		Spec:       corev1.NodeSpec{PodCIDR: cfg.PodCIDR, PodCIDRs: []string{cfg.PodCIDR}, Taints: cfg.Taints},
		Status: corev1.NodeStatus{
			Phase:       corev1.NodeRunning,
			Capacity:    capacity,
			Allocatable: capacity.DeepCopy(),
			Conditions: []corev1.NodeCondition{
				cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "the local node runs pods as host processes"),
				cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", ""),
				cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", ""),
				cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", ""),
				cond(corev1.NodeNetworkUnavailable, corev1.ConditionFalse, "RouteCreated", "pods are on bridge "+cfg.Bridge),
			},
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: h.HostIP},
				{Type: corev1.NodeHostName, Address: cfg.Name},
			},
			NodeInfo: corev1.NodeSystemInfo{
				MachineID: h.MachineID, BootID: h.BootID, KernelVersion: h.Kernel, OSImage: h.OSImage,
				ContainerRuntimeVersion: "virtkit-local://host-processes", KubeletVersion: KubeletVersion,
				OperatingSystem: "linux", Architecture: h.Arch,
			},
		},
	}
}

// hostIP is the address of the host's default route (its source, else
// its interface's first IPv4 address), or 127.0.0.1.
func hostIP() string {
	routes, err := netlink.RouteList(nil, netlink.FAMILY_V4)
	if err != nil {
		return "127.0.0.1"
	}
	for _, r := range routes {
		if r.Dst != nil && !r.Dst.IP.IsUnspecified() {
			continue
		}
		if r.Src != nil {
			return r.Src.String()
		}
		link, err := netlink.LinkByIndex(r.LinkIndex)
		if err != nil {
			continue
		}
		addrs, _ := netlink.AddrList(link, netlink.FAMILY_V4)
		for _, a := range addrs {
			if a.IP.IsGlobalUnicast() {
				return a.IP.String()
			}
		}
	}
	return "127.0.0.1"
}

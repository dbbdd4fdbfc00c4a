package metrics

import (
	"context"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/virt/migrate"
)

// Label values KubeVirt uses in kubevirt_vmi_phase_count: none for a label
// the VMI does not set, other for an instance type or preference it does
// not name (KubeVirt names only those of vendors it knows).
const (
	LabelNone  = "<none>"
	LabelOther = "<other>"
)

// annotationPrefix is where the os, workload and flavor labels come from
// (vm.kubevirt.io/os, ...), as in KubeVirt's common templates.
const annotationPrefix = "vm.kubevirt.io/"

// VMIStats is virt-controller's collector of the cluster's VMIs, computed
// from the controllers' cache when Prometheus scrapes:
//
//   - kubevirt_vmi_phase_count{node,phase,os,workload,flavor,instance_type,preference}:
//     VMIs per node and phase (KubeVirt's older name of the per-node phase
//     count; KubeVirt now records it as node:kubevirt_vmi_phase:sum).
//     phase is lower case ("running"), as in KubeVirt;
//   - kubevirt_vmi_info{node,namespace,name,phase,os,workload,flavor,instance_type,preference,guest_os_*}:
//     1 per VMI; labels it does not know are empty, as in KubeVirt;
//   - kubevirt_vmi_non_evictable{node,namespace,name}: 1 for a VMI whose
//     eviction strategy (its own, else the KubeVirt CR's) is LiveMigrate
//     and which is not known to be migratable (its LiveMigratable condition
//     False or not set yet), 0 for every other VMI, as in KubeVirt.
//
// instance_type and preference say LabelOther whenever the VMI names one:
// virtkit does not read instance types, so it cannot tell a known vendor's
// from a user's own, and KubeVirt names only the former.
type VMIStats struct {
	r            client.Reader
	o            options
	phaseCount   *prometheus.Desc
	info         *prometheus.Desc
	nonEvictable *prometheus.Desc
}

// NonEvictableName is KubeVirt's gauge of the VMIs a node drain cannot
// move: VMIs set to live migrate on eviction that cannot migrate.
const NonEvictableName = "kubevirt_vmi_non_evictable"

var _ prometheus.Collector = (*VMIStats)(nil)

// NewVMIStats returns the collector over the VMIs r lists (the manager's
// cache: a scrape makes no API call).
func NewVMIStats(r client.Reader, opts ...Option) *VMIStats {
	return &VMIStats{
		r: r, o: newOptions(opts),
		phaseCount: prometheus.NewDesc("kubevirt_vmi_phase_count", "VMI phase.",
			[]string{"node", "phase", "os", "workload", "flavor", "instance_type", "preference"}, nil),
		info: prometheus.NewDesc("kubevirt_vmi_info", "Information about VirtualMachineInstances.",
			[]string{"node", "namespace", "name", "phase", "os", "workload", "flavor", "instance_type", "preference",
				"guest_os_kernel_release", "guest_os_machine", "guest_os_arch", "guest_os_name", "guest_os_version_id"}, nil),
		nonEvictable: prometheus.NewDesc(NonEvictableName,
			"Indication for a VirtualMachine that its eviction strategy is set to Live Migration but is not migratable.",
			[]string{"node", "namespace", "name"}, nil),
	}
}

// Describe sends the three descriptors.
func (c *VMIStats) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.phaseCount
	ch <- c.info
	ch <- c.nonEvictable
}

// Collect lists the VMIs and sends the counts and one info series each.
// A list that fails is logged and leaves the series out of this scrape.
func (c *VMIStats) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.o.timeout)
	defer cancel()
	var list virtv1.VirtualMachineInstanceList
	if err := c.r.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		c.o.log.Error(err, "listing VirtualMachineInstances for kubevirt_vmi_phase_count and kubevirt_vmi_info")
		return
	}
	var kvs virtv1.KubeVirtList
	if err := c.r.List(ctx, &kvs, client.UnsafeDisableDeepCopy); err != nil {
		c.o.log.Error(err, "listing KubeVirt CRs for "+NonEvictableName)
		return
	}
	var cluster *virtv1.EvictionStrategy
	if len(kvs.Items) > 0 {
		cluster = migrate.ClusterEvictionStrategy(&kvs.Items[0])
	}
	type count struct{ node, phase, os, workload, flavor, instanceType, preference string }
	counts := map[count]int{}
	for i := range list.Items {
		vmi := &list.Items[i]
		os, workload, flavor := systemLabels(vmi.Annotations)
		itype, pref := instanceTypeLabels(vmi.Annotations)
		phase := strings.ToLower(string(vmi.Status.Phase))
		counts[count{vmi.Status.NodeName, phase, orNone(os), orNone(workload), orNone(flavor), orNone(itype), orNone(pref)}]++
		g := vmi.Status.GuestOSInfo
		machine := ""
		if vmi.Status.Machine != nil {
			machine = vmi.Status.Machine.Type
		}
		ch <- prometheus.MustNewConstMetric(c.info, prometheus.GaugeValue, 1,
			vmi.Status.NodeName, vmi.Namespace, vmi.Name, phase, os, workload, flavor, itype, pref,
			g.KernelRelease, machine, g.Machine, g.Name, g.VersionID)
		ch <- prometheus.MustNewConstMetric(c.nonEvictable, prometheus.GaugeValue, nonEvictable(vmi, cluster),
			vmi.Status.NodeName, vmi.Namespace, vmi.Name)
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.phaseCount, prometheus.GaugeValue, float64(n),
			k.node, k.phase, k.os, k.workload, k.flavor, k.instanceType, k.preference)
	}
}

// systemLabels are the os, workload and flavor annotations; empty when unset.
func systemLabels(a map[string]string) (os, workload, flavor string) {
	return a[annotationPrefix+"os"], a[annotationPrefix+"workload"], a[annotationPrefix+"flavor"]
}

// instanceTypeLabels are LabelOther for a VMI that names an instance type
// (or preference), empty otherwise.
func instanceTypeLabels(a map[string]string) (instanceType, preference string) {
	if a[virtv1.InstancetypeAnnotation] != "" || a[virtv1.ClusterInstancetypeAnnotation] != "" {
		instanceType = LabelOther
	}
	if a[virtv1.PreferenceAnnotation] != "" || a[virtv1.ClusterPreferenceAnnotation] != "" {
		preference = LabelOther
	}
	return instanceType, preference
}

func orNone(s string) string {
	if s == "" {
		return LabelNone
	}
	return s
}

// nonEvictable is 1 when vmi must live migrate on eviction and is not known
// to be migratable, as KubeVirt judges it (conservatively: no condition yet
// counts as not migratable).
func nonEvictable(vmi *virtv1.VirtualMachineInstance, cluster *virtv1.EvictionStrategy) float64 {
	if migrate.EvictionStrategy(vmi, cluster) != virtv1.EvictionStrategyLiveMigrate {
		return 0
	}
	for _, c := range vmi.Status.Conditions {
		if c.Type == virtv1.VirtualMachineInstanceIsMigratable && c.Status == corev1.ConditionTrue {
			return 0
		}
	}
	return 1
}

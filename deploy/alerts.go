package deploy

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PrometheusRuleName names the PrometheusRule of virtkit's recording rules
// and alerts, KubeVirt's; PrometheusRuleFile is the release file holding it.
const (
	PrometheusRuleName = "prometheus-kubevirt-rules"
	PrometheusRuleFile = "kubevirt-prometheusrule.yaml"
)

// RuleGroup is a group of Prometheus rules, as a rule file and a
// PrometheusRule's spec.groups hold them.
type RuleGroup struct {
	Name  string `json:"name"`
	Rules []Rule `json:"rules"`
}

// Rule is a recording rule (Record) or an alert (Alert).
type Rule struct {
	Record      string            `json:"record,omitempty"`
	Alert       string            `json:"alert,omitempty"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Alerts says how virtkit's alerts are written.
type Alerts struct {
	// Namespace holds the daemons whose pods the rules watch (required).
	Namespace string
	// RunbookBase, when set, is the URL prefix of the runbooks: each alert
	// gets a runbook_url annotation of RunbookBase + its name, as
	// KubeVirt's point at its runbook site. docs/alerts.md holds them.
	RunbookBase string
}

// Severities and the operator_health_impact label, KubeVirt's.
const (
	severityCritical = "critical"
	severityWarning  = "warning"
	severityInfo     = "info"
)

// unusualRestarts is CDI's threshold of restarts of a pod filling a
// DataVolume.
const unusualRestarts = 3

// highRestarts is CDI's recording rule of the pods of kind (import,
// upload, clone) named as pod, whose container restarted more than
// unusualRestarts times.
func highRestarts(kind, pod, container string) Rule {
	return Rule{Record: "cluster:kubevirt_cdi_" + kind + "_pods_high_restart:count",
		Expr: fmt.Sprintf("count(kube_pod_container_status_restarts_total{pod=~'%s', container='%s'} > %d) or on() vector(0)", pod, container, unusualRestarts)}
}

// cdiAlert labels one of CDI's alerts with its component, as CDI does.
func cdiAlert(r Rule) Rule {
	r.Labels["kubernetes_operator_component"] = "containerized-data-importer"
	return r
}

// AlertRules returns virtkit's recording rules and alerts. Alert names,
// expressions and labels are KubeVirt's where virtkit has the signal, so
// that dashboards, silences and routes written for KubeVirt keep working;
// docs/alerts.md has a runbook for each. The rules read kube-state-metrics
// (pods, daemon sets, nodes) and the series virtkit's daemons serve.
func AlertRules(a Alerts) ([]RuleGroup, error) {
	if a.Namespace == "" {
		return nil, errors.New("deploy: Alerts.Namespace: required")
	}
	ns := a.Namespace
	podsRunning := func(component string) Rule {
		return Rule{Record: "cluster:kubevirt_" + strings.ReplaceAll(component, "-", "_") + "_pods_running:count",
			Expr: fmt.Sprintf("count(kube_pod_status_phase{namespace='%s', pod=~'%s-.*', phase='Running'} == 1) or vector(0)", ns, component)}
	}
	ready := func(component string) Rule {
		return Rule{Record: "cluster:kubevirt_" + strings.ReplaceAll(component, "-", "_") + "_ready:sum",
			Expr: fmt.Sprintf("sum(kube_pod_status_ready{namespace='%s', pod=~'%s-.*', condition='true'}) or vector(0)", ns, component)}
	}
	records := RuleGroup{Name: "kubevirt.rules", Rules: []Rule{
		podsRunning("virt-api"), podsRunning("virt-controller"), podsRunning("virt-handler"), podsRunning("virt-operator"),
		ready("virt-api"), ready("virt-controller"), ready("virt-handler"),
		{Record: "cluster:kubevirt_virt_controller_leading:sum",
			Expr: fmt.Sprintf("sum(leader_election_master_status{namespace='%s', pod=~'virt-controller-.*'}) or vector(0)", ns)},
		{Record: "cluster:kubevirt_nodes_allocatable:count", Expr: "count(count by (node) (kube_node_status_allocatable)) or vector(0)"},
		{Record: "cluster:kubevirt_nodes_with_kvm:count",
			Expr: "count(kube_node_status_allocatable{resource='devices_kubevirt_io_kvm'} != 0) or vector(0)"},
		// CDI's: the pods that fill DataVolumes, restarted more than
		// unusualRestarts times.
		highRestarts("import", "importer-.*", "importer"),
		highRestarts("upload", "cdi-upload-.*", "cdi-upload-server"),
		highRestarts("clone", ".*-source-pod", "cdi-clone-source"),
	}}
	errorRatio := func(component string) string {
		sel := fmt.Sprintf("namespace='%s', pod=~'%s-.*'", ns, component)
		return fmt.Sprintf("sum(rate(kubevirt_rest_client_requests_total{%s, code=~'(4|5)[0-9][0-9]'}[5m])) / "+
			"sum(rate(kubevirt_rest_client_requests_total{%s}[5m])) >= 0.8", sel, sel)
	}
	multiNode := "cluster:kubevirt_nodes_allocatable:count > 1"
	alerts := RuleGroup{Name: "kubevirt.alerts", Rules: []Rule{
		alert("VirtAPIDown", "cluster:kubevirt_virt_api_pods_running:count == 0", "10m", severityCritical, severityCritical,
			"All virt-api servers are down."),
		alert("LowVirtAPICount", fmt.Sprintf("(%s) and (cluster:kubevirt_virt_api_pods_running:count < 2)", multiNode), "60m",
			severityWarning, severityWarning, "More than one node is available, but fewer than two virt-api servers run."),
		alert("VirtControllerDown", "cluster:kubevirt_virt_controller_pods_running:count == 0", "10m", severityCritical, severityCritical,
			"No running virt-controller was detected for the last 10 minutes."),
		alert("LowVirtControllersCount", fmt.Sprintf("(%s) and (cluster:kubevirt_virt_controller_ready:sum < 2)", multiNode), "10m",
			severityWarning, severityWarning, "More than one node is available, but fewer than two virt-controllers are ready."),
		alert("NoLeadingVirtController", "cluster:kubevirt_virt_controller_leading:sum == 0", "10m", severityCritical, severityCritical,
			"No virt-controller holds the leader lease: no VM or VMI is being reconciled."),
		alert("VirtHandlerDown", "cluster:kubevirt_virt_handler_pods_running:count == 0", "10m", severityCritical, severityCritical,
			"No running virt-handler was detected for the last 10 minutes."),
		alert("VirtHandlerDaemonSetRolloutFailing",
			fmt.Sprintf("(kube_daemonset_status_number_ready{namespace='%s', daemonset='virt-handler'} - "+
				"kube_daemonset_status_desired_number_scheduled{namespace='%s', daemonset='virt-handler'}) != 0", ns, ns),
			"15m", severityWarning, severityWarning, "Some virt-handlers failed to roll out."),
		alert("VirtOperatorDown", "cluster:kubevirt_virt_operator_pods_running:count == 0", "10m", severityCritical, severityCritical,
			"All virt-operator servers are down."),
		alert("VirtApiRESTErrorsBurst", errorRatio("virt-api"), "5m", severityCritical, severityCritical,
			"More than 80% of the REST calls of virt-api failed in the last 5 minutes."),
		alert("VirtControllerRESTErrorsBurst", errorRatio("virt-controller"), "5m", severityCritical, severityCritical,
			"More than 80% of the REST calls of virt-controller failed in the last 5 minutes."),
		alert("VirtHandlerRESTErrorsBurst", errorRatio("virt-handler"), "5m", severityCritical, severityCritical,
			"More than 80% of the REST calls of virt-handler failed in the last 5 minutes."),
		alert("LowKVMNodesCount", fmt.Sprintf("(%s) and (cluster:kubevirt_nodes_with_kvm:count < 2)", multiNode), "5m",
			severityWarning, severityWarning, "At least two nodes with KVM resources are needed for live migration."),
		withDescription(alert("VMCannotBeEvicted", withVMLabel("name",
			"kubevirt_vmi_non_evictable * on(name, namespace) group_left() topk by(name, namespace) (1, kubevirt_vmi_info{phase='running'}) == 1"),
			"1m", severityWarning, "none", "The VM's eviction strategy is set to Live Migration but the VM is not migratable"),
			"Eviction policy for VirtualMachine {{ $labels.name }} in namespace {{ $labels.namespace }} (on node {{ $labels.node }}) "+
				"is set to Live Migration but the VM is not migratable"),
		withDescription(alert("KubeVirtVMIExcessiveMigrations", withVMLabel("vmi",
			"sum by (vmi, namespace) (topk by (vmi, namespace, vmim) (1, max_over_time(kubevirt_vmi_migration_succeeded[1d]))) >= 12"),
			"", severityWarning, "none", "An excessive amount of migrations have been detected on a VirtualMachineInstance in the last 24 hours."),
			"VirtualMachineInstance {{ $labels.vmi }} in namespace {{ $labels.namespace }} has been migrated more than 12 times during the last 24 hours"),
		alert("OutdatedVirtualMachineInstanceWorkloads", "max(kubevirt_vmi_number_of_outdated) != 0", "24h", severityWarning, "none",
			"Some running VMIs are still active in outdated pods after KubeVirt control plane update has completed."),
		// virtkit's own: a subresource API (console, VNC, start...) that
		// fails, which KubeVirt has no series for.
		withDescription(alert("VirtkitSubresourceErrorsHigh",
			"sum(rate(virtkit_subresource_requests_total{code=~'5[0-9][0-9]'}[10m])) / sum(rate(virtkit_subresource_requests_total[10m])) > 0.2",
			"10m", severityWarning, severityWarning, "More than 20% of the calls of subresources.kubevirt.io failed in the last 10 minutes."),
			"virt-api answers more than one call in five of the subresource API (start, stop, console, VNC, migrate...) with a server error: "+
				"users cannot drive their VMs."),
		// CDI's, on the DataVolume controller's and the StorageProfiles'
		// series.
		cdiAlert(alert("CDIDataVolumeUnusualRestartCount",
			"cluster:kubevirt_cdi_import_pods_high_restart:count > 0 or cluster:kubevirt_cdi_upload_pods_high_restart:count > 0 or "+
				"cluster:kubevirt_cdi_clone_pods_high_restart:count > 0", "5m", severityWarning, "none",
			"Some CDI population workloads have an unusual restart count, meaning they are probably failing and need to be investigated")),
		cdiAlert(alert("CDIStorageProfilesIncomplete", `sum by(storageclass,provisioner) ((kubevirt_cdi_storageprofile_info{complete="false"}>0))`,
			"5m", severityInfo, "none",
			"Incomplete StorageProfile {{ $labels.storageclass }}, accessMode/volumeMode cannot be inferred by CDI for PVC population request")),
		cdiAlert(alert("CDINoDefaultStorageClass", `sum(kubevirt_cdi_storageprofile_info{default="true"} or on() vector(0)) + `+
			`sum(kubevirt_cdi_storageprofile_info{virtdefault="true"} or on() vector(0)) + `+
			`(count(kubevirt_cdi_datavolume_pending == 0) or on() vector(0)) == 0`, "5m", severityWarning, "none",
			"No default StorageClass or virtualization StorageClass, and a DataVolume is pending for one")),
		cdiAlert(alert("CDIMultipleDefaultVirtStorageClasses", `sum(kubevirt_cdi_storageprofile_info{virtdefault="true"} or on() vector(0)) > 1`,
			"5m", severityWarning, "none", "More than one default virtualization StorageClass detected")),
		cdiAlert(alert("CDIDefaultStorageClassDegraded", `sum(kubevirt_cdi_storageprofile_info{default="true",degraded="false"} or on() vector(0)) + `+
			`sum(kubevirt_cdi_storageprofile_info{virtdefault="true",degraded="false"} or on() vector(0)) + `+
			`on () (0*(sum(kubevirt_cdi_storageprofile_info{default="true"}) or sum(kubevirt_cdi_storageprofile_info{virtdefault="true"}))) == 0`,
			"5m", severityWarning, "none", "Default storage class has no smart clone or ReadWriteMany")),
	}}
	if a.RunbookBase != "" {
		for i := range alerts.Rules {
			alerts.Rules[i].Annotations["runbook_url"] = a.RunbookBase + alerts.Rules[i].Alert
		}
	}
	return []RuleGroup{records, alerts}, nil
}

// alert is one alert with KubeVirt's labels and summary.
func alert(name, expr, forDuration, severity, healthImpact, summary string) Rule {
	return Rule{Alert: name, Expr: expr, For: forDuration,
		Labels:      map[string]string{"severity": severity, "operator_health_impact": healthImpact, "kubernetes_operator_part_of": "kubevirt"},
		Annotations: map[string]string{"summary": summary}}
}

func withDescription(r Rule, description string) Rule {
	r.Annotations["description"] = description
	return r
}

// withVMLabel adds KubeVirt's vm label, copied from label.
func withVMLabel(label, expr string) string {
	return fmt.Sprintf("label_replace(%s, \"vm\", \"$1\", %q, \"(.+)\")", expr, label)
}

// PrometheusRuleObjects returns the PrometheusRule (monitoring.coreos.com/v1,
// for the Prometheus operator) holding AlertRules, in a.Namespace.
func PrometheusRuleObjects(a Alerts) ([]client.Object, error) {
	groups, err := AlertRules(a)
	if err != nil {
		return nil, err
	}
	var spec []any
	for _, g := range groups {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&g)
		if err != nil {
			return nil, err
		}
		spec = append(spec, u)
	}
	rule := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "monitoring.coreos.com/v1",
		"kind":       "PrometheusRule",
		"metadata": map[string]any{"name": PrometheusRuleName, "namespace": a.Namespace,
			"labels": map[string]any{Label: "virtkit", PrometheusLabel: "true"}},
		"spec": map[string]any{"groups": spec},
	}}
	return []client.Object{rule}, nil
}

// Command crdgen turns controller-gen's raw CRDs for the kubevirt.io API types
// and CDI's API types into the CRDs virtkit installs (deploy/crds): it keeps
// only the kinds virtkit serves, and
// adds what controller-gen cannot know from the Go types: the status
// subresource, printer columns, short names and categories as KubeVirt has them.
//
//	crdgen -in RAWDIR -out deploy/crds
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// kind is what virtkit adds to one generated CRD.
type kind struct {
	shortNames []string
	columns    []apiextensionsv1.CustomResourceColumnDefinition
	status     bool
	// cluster marks a cluster-scoped kind; controller-gen makes every kind namespaced
	// unless the Go type carries a marker, which kubevirt.io/api's do not.
	cluster bool
	// selectable lists the JSON paths a client may filter on with a field
	// selector (CRD selectableFields): virt-handler watches only the VMIs of
	// its node (.status.nodeName) without the node label KubeVirt patches on.
	selectable []string
	// scale serves the scale subresource (kubectl scale, a
	// HorizontalPodAutoscaler) from .spec.replicas, .status.replicas and
	// .status.labelSelector, as KubeVirt's replica sets and pools.
	scale bool
	// storage names the stored version of a kind served in several
	// (kubevirt.io/api marks none); the others are served beside it.
	storage string
	// markers keeps what the Go type's own kubebuilder markers say (short
	// names, printer columns, categories, subresources), as CDI's types
	// carry them.
	markers bool
	// prerequisite marks a kind virtkit uses but does not serve: a cluster
	// has it from elsewhere (the VolumeSnapshot kinds come with the
	// cluster's CSI snapshot controller), virt-local installs it. It goes
	// to the prerequisites folder.
	prerequisite bool
	// approval is the api-approved.kubernetes.io annotation a CRD of a
	// protected group (*.k8s.io) must carry: where its API was approved.
	approval string
}

func col(name, typ, path string) apiextensionsv1.CustomResourceColumnDefinition {
	return apiextensionsv1.CustomResourceColumnDefinition{Name: name, Type: typ, JSONPath: path}
}

var (
	age   = col("Age", "date", ".metadata.creationTimestamp")
	ready = col("Ready", "string", ".status.conditions[?(@.type=='Ready')].status")
)

// kinds lists the kinds virtkit serves, by CRD name, with KubeVirt's short
// names and printer columns. A generated CRD not listed here is not a kind
// (controller-gen also emits one for DataVolumeTemplateSpec) and is dropped.
func kinds() map[string]kind {
	return map[string]kind{
		"virtualmachines.kubevirt.io": {
			shortNames: []string{"vm", "vms"},
			columns:    []apiextensionsv1.CustomResourceColumnDefinition{age, col("Status", "string", ".status.printableStatus"), ready},
			status:     true,
		},
		"virtualmachineinstances.kubevirt.io": {
			shortNames: []string{"vmi", "vmis"},
			columns: []apiextensionsv1.CustomResourceColumnDefinition{age, col("Phase", "string", ".status.phase"),
				col("IP", "string", ".status.interfaces[0].ipAddress"), col("NodeName", "string", ".status.nodeName"), ready,
				col("Live-Migratable", "string", ".status.conditions[?(@.type=='LiveMigratable')].status")},
			status:     true,
			selectable: []string{".status.nodeName"},
		},
		"virtualmachineinstancemigrations.kubevirt.io": {
			shortNames: []string{"vmim", "vmims"},
			columns:    []apiextensionsv1.CustomResourceColumnDefinition{col("Phase", "string", ".status.phase"), col("VMI", "string", ".spec.vmiName")},
			status:     true,
			selectable: []string{".spec.vmiName"},
		},
		"virtualmachineinstancereplicasets.kubevirt.io": {
			shortNames: []string{"vmirs", "vmirss"},
			columns: []apiextensionsv1.CustomResourceColumnDefinition{col("Desired", "integer", ".spec.replicas"),
				col("Current", "integer", ".status.replicas"), col("Ready", "integer", ".status.readyReplicas"), age},
			status: true,
			scale:  true,
		},
		"virtualmachineinstancepresets.kubevirt.io": {shortNames: []string{"vmipreset", "vmipresets"}},
		"kubevirts.kubevirt.io": {
			shortNames: []string{"kv", "kvs"},
			columns:    []apiextensionsv1.CustomResourceColumnDefinition{age, col("Phase", "string", ".status.phase")},
			status:     true,
		},
		"virtualmachineinstancetypes.instancetype.kubevirt.io":        {shortNames: []string{"vminstancetype", "vminstancetypes", "vmf", "vmfs"}},
		"virtualmachineclusterinstancetypes.instancetype.kubevirt.io": {shortNames: []string{"vmclusterinstancetype", "vmclusterinstancetypes", "vmcf", "vmcfs"}, cluster: true},
		"virtualmachinepreferences.instancetype.kubevirt.io":          {shortNames: []string{"vmpref", "vmprefs", "vmp", "vmps"}},
		"virtualmachineclusterpreferences.instancetype.kubevirt.io":   {shortNames: []string{"vmcpref", "vmcprefs", "vmcp", "vmcps"}, cluster: true},
		"migrationpolicies.migrations.kubevirt.io":                    {status: true, cluster: true},
		"datavolumes.cdi.kubevirt.io":                                 {markers: true},
		// CDI serves the DataSource's status as a subresource, which its
		// Go type's markers do not say.
		"datasources.cdi.kubevirt.io": {markers: true, status: true},
		// As CDI's: cluster-scoped, no status subresource.
		"cdiconfigs.cdi.kubevirt.io": {markers: true},
		// CDI's install and configuration resource, as CDI's: cluster-scoped,
		// short names cdi and cdis, no status subresource.
		"cdis.cdi.kubevirt.io": {markers: true},
		// As CDI's: cluster-scoped, status a subresource.
		"storageprofiles.cdi.kubevirt.io": {markers: true, status: true},
		// The CSI snapshot kinds, as external-snapshotter v8 defines them.
		"volumesnapshots.snapshot.storage.k8s.io":        {markers: true, prerequisite: true, approval: snapshotAPIApproval},
		"volumesnapshotcontents.snapshot.storage.k8s.io": {markers: true, prerequisite: true, approval: snapshotAPIApproval},
		"volumesnapshotclasses.snapshot.storage.k8s.io":  {markers: true, prerequisite: true, approval: snapshotAPIApproval},
		// And the group snapshot kinds, whose CRDs the snapshot controller
		// waits 30 seconds for at its start when they are missing.
		"volumegroupsnapshots.groupsnapshot.storage.k8s.io":        {markers: true, prerequisite: true, approval: groupSnapshotAPIApproval},
		"volumegroupsnapshotcontents.groupsnapshot.storage.k8s.io": {markers: true, prerequisite: true, approval: groupSnapshotAPIApproval},
		"volumegroupsnapshotclasses.groupsnapshot.storage.k8s.io":  {markers: true, prerequisite: true, approval: groupSnapshotAPIApproval},
		// KubeVirt's snapshot kinds, with its short names and columns.
		"virtualmachinesnapshots.snapshot.kubevirt.io": {
			shortNames: []string{"vmsnapshot", "vmsnapshots"},
			columns: []apiextensionsv1.CustomResourceColumnDefinition{col("SourceKind", "string", ".spec.source.kind"),
				col("SourceName", "string", ".spec.source.name"), col("Phase", "string", ".status.phase"),
				col("ReadyToUse", "boolean", ".status.readyToUse"), col("CreationTime", "date", ".status.creationTime"),
				col("Error", "string", ".status.error.message")},
			status: true,
		},
		"virtualmachinesnapshotcontents.snapshot.kubevirt.io": {
			shortNames: []string{"vmsnapshotcontent", "vmsnapshotcontents"},
			columns: []apiextensionsv1.CustomResourceColumnDefinition{col("ReadyToUse", "boolean", ".status.readyToUse"),
				col("CreationTime", "date", ".status.creationTime"), col("Error", "string", ".status.error.message")},
			status: true,
		},
		"virtualmachinerestores.snapshot.kubevirt.io": {
			shortNames: []string{"vmrestore", "vmrestores"},
			columns: []apiextensionsv1.CustomResourceColumnDefinition{col("TargetKind", "string", ".spec.target.kind"),
				col("TargetName", "string", ".spec.target.name"), col("Complete", "boolean", ".status.complete"),
				col("RestoreTime", "date", ".status.restoreTime")},
			status: true,
		},
		// KubeVirt's export kind, with its short names and columns.
		"virtualmachineexports.export.kubevirt.io": {
			shortNames: []string{"vmexport", "vmexports"},
			columns: []apiextensionsv1.CustomResourceColumnDefinition{col("SourceKind", "string", ".spec.source.kind"),
				col("SourceName", "string", ".spec.source.name"), col("Phase", "string", ".status.phase")},
			status: true,
		},
		"virtualmachineclones.clone.kubevirt.io": {
			shortNames: []string{"vmclone", "vmclones"},
			columns: []apiextensionsv1.CustomResourceColumnDefinition{col("Phase", "string", ".status.phase"),
				col("SourceVirtualMachine", "string", ".spec.source.name"), col("TargetVirtualMachine", "string", ".spec.target.name")},
			status:  true,
			storage: "v1beta1",
		},
		"virtualmachinepools.pool.kubevirt.io": {
			shortNames: []string{"vmpool", "vmpools"},
			columns: []apiextensionsv1.CustomResourceColumnDefinition{col("Desired", "integer", ".spec.replicas"),
				col("Current", "integer", ".status.replicas"), col("Ready", "integer", ".status.readyReplicas"), age},
			status:  true,
			scale:   true,
			storage: "v1beta1",
		},
	}
}

// snapshotAPIApproval is where the snapshot.storage.k8s.io API was
// approved, as external-snapshotter's own CRDs say.
const snapshotAPIApproval = "https://github.com/kubernetes-csi/external-snapshotter/pull/814"

// groupSnapshotAPIApproval is where the groupsnapshot.storage.k8s.io API
// was approved, as external-snapshotter's own CRDs say.
const groupSnapshotAPIApproval = "https://github.com/kubernetes-csi/external-snapshotter/pull/1337"

func main() {
	in := flag.String("in", "", "folder of controller-gen's CRDs")
	out := flag.String("out", "", "folder to write virtkit's CRDs to")
	prereq := flag.String("prerequisites-out", "", "folder to write the CRDs of kinds virtkit uses but does not serve to")
	flag.Parse()
	if *in == "" || *out == "" || *prereq == "" {
		fmt.Fprintln(os.Stderr, "usage: crdgen -in RAWDIR -out OUTDIR -prerequisites-out PREREQDIR")
		os.Exit(2)
	}
	if err := run(*in, *out, *prereq); err != nil {
		fmt.Fprintln(os.Stderr, "crdgen:", err)
		os.Exit(1)
	}
}

func run(in, out, prereq string) error {
	// controller-gen's output, and in folders below it an older version of
	// a kind generated on its own.
	var files []string
	err := filepath.WalkDir(in, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".yaml") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		return err
	}
	sort.Strings(files)
	want := kinds()
	crds := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(raw, &crd); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if _, ok := want[crd.Name]; !ok {
			continue
		}
		if have, ok := crds[crd.Name]; ok {
			have.Spec.Versions = append(have.Spec.Versions, crd.Spec.Versions...)
			continue
		}
		crds[crd.Name] = &crd
	}
	for _, d := range []string{out, prereq} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	var missing []string
	for name, k := range want {
		crd, ok := crds[name]
		if !ok {
			missing = append(missing, name)
			continue
		}
		b, err := render(*crd, k)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		dir := out
		if k.prerequisite {
			dir = prereq
		}
		if err := os.WriteFile(filepath.Join(dir, name+".yaml"), b, 0o644); err != nil {
			return err
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("controller-gen produced no CRD for %s", strings.Join(missing, ", "))
	}
	return nil
}

func render(crd apiextensionsv1.CustomResourceDefinition, k kind) ([]byte, error) {
	source := "kubevirt.io/api v1.8.0"
	switch crd.Spec.Group {
	case "cdi.kubevirt.io":
		source = "kubevirt.io/containerized-data-importer-api v1.65.0"
	case "snapshot.storage.k8s.io", "groupsnapshot.storage.k8s.io":
		source = "github.com/kubernetes-csi/external-snapshotter/client/v8 v8.7.0"
	}
	if k.approval != "" {
		if crd.Annotations == nil {
			crd.Annotations = map[string]string{}
		}
		crd.Annotations["api-approved.kubernetes.io"] = k.approval
	}
	if !k.markers {
		crd.Spec.Names.ShortNames = k.shortNames
		crd.Spec.Names.Categories = []string{"all"}
		if crd.Spec.Group != "kubevirt.io" && crd.Spec.Group != "snapshot.kubevirt.io" {
			crd.Spec.Names.Categories = nil
		}
	}
	if k.cluster {
		crd.Spec.Scope = apiextensionsv1.ClusterScoped
	}
	if crd.Labels == nil {
		crd.Labels = map[string]string{}
	}
	crd.Labels["app.kubernetes.io/part-of"] = "virtkit"
	sort.Slice(crd.Spec.Versions, func(i, j int) bool { return crd.Spec.Versions[i].Name < crd.Spec.Versions[j].Name })
	if len(crd.Spec.Versions) > 1 && k.storage == "" {
		return nil, fmt.Errorf("%d versions and no storage version named", len(crd.Spec.Versions))
	}
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		if k.storage != "" {
			v.Storage = v.Name == k.storage
		}
		if k.markers {
			if k.status && v.Subresources == nil {
				v.Subresources = &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}}
			}
			continue
		}
		v.AdditionalPrinterColumns = k.columns
		v.SelectableFields = nil
		for _, f := range k.selectable {
			v.SelectableFields = append(v.SelectableFields, apiextensionsv1.SelectableField{JSONPath: f})
		}
		if k.status {
			v.Subresources = &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}}
		}
		if k.scale {
			if v.Subresources == nil {
				v.Subresources = &apiextensionsv1.CustomResourceSubresources{}
			}
			selector := ".status.labelSelector"
			v.Subresources.Scale = &apiextensionsv1.CustomResourceSubresourceScale{
				SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas", LabelSelectorPath: &selector}
		}
	}
	b, err := yaml.Marshal(crd)
	if err != nil {
		return nil, err
	}
	// Drop the empty status block that the Go type always carries.
	b = bytes.Replace(b, []byte("status:\n  acceptedNames:\n    kind: \"\"\n    plural: \"\"\n  conditions: null\n  storedVersions: null\n"), nil, 1)
	return append([]byte("# Generated by 'make generate' (controller-gen and hack/crdgen) from "+source+". Do not edit.\n"), b...), nil
}

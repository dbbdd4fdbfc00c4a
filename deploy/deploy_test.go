package deploy_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/virtkit/virtkit/deploy"
	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// The embedded CRDs are the files in crds/, one per kind virtkit serves.
func TestCRDsAreTheGeneratedFiles(t *testing.T) {
	crds, err := deploy.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("crds/*.yaml")
	if len(crds) != len(files) || len(crds) == 0 {
		t.Fatalf("CRDs() = %d, crds/ holds %d files", len(crds), len(files))
	}
	for i, crd := range crds {
		if want := filepath.Base(files[i]); crd.Name+".yaml" != want {
			t.Errorf("CRD %d is %s, file %s", i, crd.Name, want)
		}
	}
}

// The snapshot kinds' CRDs are the files in prerequisites/, in their
// protected group with its approval, cluster-scoped but for VolumeSnapshot.
func TestVolumeSnapshotCRDs(t *testing.T) {
	crds, err := deploy.VolumeSnapshotCRDs()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, crd := range crds {
		got = append(got, fmt.Sprintf("%s %s approved=%t", crd.Name, crd.Spec.Scope, crd.Annotations["api-approved.kubernetes.io"] != ""))
	}
	want := []string{
		"volumegroupsnapshotclasses.groupsnapshot.storage.k8s.io Cluster approved=true",
		"volumegroupsnapshotcontents.groupsnapshot.storage.k8s.io Cluster approved=true",
		"volumegroupsnapshots.groupsnapshot.storage.k8s.io Namespaced approved=true",
		"volumesnapshotclasses.snapshot.storage.k8s.io Cluster approved=true",
		"volumesnapshotcontents.snapshot.storage.k8s.io Cluster approved=true",
		"volumesnapshots.snapshot.storage.k8s.io Namespaced approved=true",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("VolumeSnapshotCRDs (-want +got):\n%s", diff)
	}
}

// Multus's NetworkAttachmentDefinition CRD, which virt-local installs: the
// group, version and names Multus and KubeVirt use.
func TestNetworkAttachmentDefinitionCRDs(t *testing.T) {
	crds, err := deploy.NetworkAttachmentDefinitionCRDs()
	if err != nil {
		t.Fatal(err)
	}
	if len(crds) != 1 {
		t.Fatalf("%d CRDs, want 1", len(crds))
	}
	c := crds[0]
	got := fmt.Sprintf("%s %s %s/%s %s", c.Name, c.Spec.Scope, c.Spec.Group, c.Spec.Versions[0].Name, c.Spec.Names.Kind)
	if want := "network-attachment-definitions.k8s.cni.cncf.io Namespaced k8s.cni.cncf.io/v1 NetworkAttachmentDefinition"; got != want {
		t.Errorf("CRD %s, want %s", got, want)
	}
}

func TestVirtAPIObjectsErrors(t *testing.T) {
	for _, tc := range []struct {
		o    deploy.VirtAPI
		want string
	}{
		{deploy.VirtAPI{Service: "s", Port: 443, CABundle: []byte("x")}, "VirtAPI.Namespace and VirtAPI.Service: required"},
		{deploy.VirtAPI{Namespace: "n", Service: "s", CABundle: []byte("x")}, "VirtAPI.Port 0: must be positive"},
		{deploy.VirtAPI{Namespace: "n", Service: "s", Port: 443}, "VirtAPI.CABundle: required"},
	} {
		if _, err := deploy.VirtAPIObjects(tc.o); err == nil || err.Error() != "deploy: "+tc.want {
			t.Errorf("VirtAPIObjects(%+v) = %v, want %q", tc.o, err, tc.want)
		}
	}
}

// Installing on an apiserver without CRDs makes the kinds usable, and a
// second install changes nothing.
func TestInstallOnARealAPIServer(t *testing.T) {
	testenv.Integration(t)
	env := &envtest.Environment{BinaryAssetsDirectory: testenv.Output(t, "bin")}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	cl, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	crds, err := deploy.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	// No virt-api runs: the CA is never used to dial.
	api, err := deploy.VirtAPIObjects(deploy.VirtAPI{Namespace: "kubevirt", Service: "virt-api", Port: 443,
		ExternalName: "localhost", CABundle: []byte("not dialled")})
	if err != nil {
		t.Fatal(err)
	}
	var objs []client.Object
	for _, c := range crds {
		objs = append(objs, c)
	}
	objs = append(objs, api...)
	// The daemons' workloads pass the apiserver's validation (security
	// contexts, probes, volumes, affinity, disruption budgets).
	handler, err := deploy.HandlerObjects(deploy.Handler{Namespace: "kubevirt", Image: "virt-handler:test", TLSSecret: "virt-handler-certs"})
	if err != nil {
		t.Fatal(err)
	}
	apiPods, err := deploy.APIObjects(deploy.API{Namespace: "kubevirt", Image: "virt-api:test", TLSSecret: "virt-api-certs",
		HandlerClientSecret: "virt-api-handler-client"})
	if err != nil {
		t.Fatal(err)
	}
	controller, err := deploy.ControllerObjects(deploy.Controller{Namespace: "kubevirt", Image: "virt-controller:test",
		LauncherImage: "virt-launcher:test"})
	if err != nil {
		t.Fatal(err)
	}
	operator, err := deploy.OperatorObjects(deploy.Operator{Namespace: "kubevirt", Image: "virt-operator:test"})
	if err != nil {
		t.Fatal(err)
	}
	objs = append(append(append(append(objs, handler...), apiPods...), controller...), operator...)
	for round := 1; round <= 2; round++ {
		if err := deploy.Apply(ctx, cl, objs...); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	if err := deploy.WaitEstablished(ctx, cl, crds); err != nil {
		t.Fatal(err)
	}
	// A kind no webhook intercepts (no virt-api answers here).
	kv := &virtv1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: "kubevirt"}}
	if err := cl.Create(ctx, kv); err != nil {
		t.Errorf("creating a KubeVirt CR after install: %v", err)
	}
	svc := &corev1.Service{}
	if err := cl.Get(ctx, client.ObjectKey{Namespace: "kubevirt", Name: "virt-api"}, svc); err != nil || svc.Spec.ExternalName != "localhost" {
		t.Errorf("virt-api Service = %+v, %v; want ExternalName localhost", svc.Spec, err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := cl.Get(ctx, client.ObjectKey{Name: "virtualmachineinstances.kubevirt.io"}, crd); err != nil {
		t.Fatal(err)
	}
	if got := crd.Spec.Versions[0].SelectableFields; len(got) != 1 || got[0].JSONPath != ".status.nodeName" {
		t.Errorf("VMI selectable fields = %+v, want .status.nodeName", got)
	}
}

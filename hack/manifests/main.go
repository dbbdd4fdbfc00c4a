// Command manifests writes virtkit's release manifests, as KubeVirt
// publishes kubevirt-operator.yaml and kubevirt-cr.yaml (deploy.WriteRelease): the operator's
// (namespace, KubeVirt CRD, RBAC, Deployment) and a KubeVirt CR; and the
// alerts as a PrometheusRule (kubevirt-prometheusrule.yaml). `make
// manifests` runs it into _output/deploy.
//
//	go run ./hack/manifests -registry 127.0.0.1:5000/virtkit -tag devel -out _output/deploy
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/deploy"
)

func main() {
	registry := flag.String("registry", "127.0.0.1:5000/virtkit", "registry prefix of the images, host[:port][/path]")
	tag := flag.String("tag", "devel", "tag of the images")
	namespace := flag.String("namespace", "kubevirt", "namespace of the operator, the KubeVirt CR and the daemons")
	apiServer := flag.String("apiserver", "", "host:port of the apiserver, for a cluster whose pods cannot reach the kubernetes Service (virt-local's real node)")
	out := flag.String("out", "_output/deploy", "folder to write "+deploy.OperatorManifestFile+" and "+deploy.KubeVirtCRFile+" into")
	flag.Parse()
	if err := run(*registry, *tag, *namespace, *apiServer, *out); err != nil {
		fmt.Fprintln(os.Stderr, "manifests:", err)
		os.Exit(1)
	}
}

func run(registry, tag, namespace, apiServer, out string) error {
	objs, err := deploy.OperatorObjects(deploy.Operator{Namespace: namespace, Image: registry + "/" + deploy.OperatorName + ":" + tag,
		PullPolicy: "IfNotPresent", APIServer: apiServer})
	if err != nil {
		return err
	}
	kv := &virtv1.KubeVirt{TypeMeta: metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "KubeVirt"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "kubevirt"},
		Spec:       virtv1.KubeVirtSpec{ImagePullPolicy: "IfNotPresent"}}
	paths, err := deploy.WriteRelease(out, objs, kv)
	if err != nil {
		return err
	}
	// The alerts, for a cluster that runs the Prometheus operator.
	rules, err := deploy.PrometheusRuleObjects(deploy.Alerts{Namespace: namespace})
	if err != nil {
		return err
	}
	b, err := deploy.YAML(rules...)
	if err != nil {
		return err
	}
	p := filepath.Join(out, deploy.PrometheusRuleFile)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		return err
	}
	paths = append(paths, p)
	for _, p := range paths {
		fmt.Println(p)
	}
	return nil
}

package deploy

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// YAML is objs as one YAML stream, each document after a "---" line, in
// order: a manifest for `kubectl apply -f`.
func YAML(objs ...client.Object) ([]byte, error) {
	var b bytes.Buffer
	for _, o := range objs {
		y, err := yaml.Marshal(o)
		if err != nil {
			return nil, fmt.Errorf("deploy: %T %s: %w", o, client.ObjectKeyFromObject(o), err)
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	return b.Bytes(), nil
}

// The release manifests' file names, as KubeVirt publishes its own: the
// operator's manifest (OperatorObjects) and a KubeVirt CR.
const (
	OperatorManifestFile = "virtkit-operator.yaml"
	KubeVirtCRFile       = "kubevirt-cr.yaml"
)

// WriteRelease writes operator (OperatorObjects' result) to
// dir/OperatorManifestFile and kv to dir/KubeVirtCRFile, creating dir, and
// returns the two paths in that order.
func WriteRelease(dir string, operator []client.Object, kv client.Object) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("deploy: %w", err)
	}
	var paths []string
	for _, f := range []struct {
		name string
		objs []client.Object
	}{{OperatorManifestFile, operator}, {KubeVirtCRFile, []client.Object{kv}}} {
		b, err := YAML(f.objs...)
		if err != nil {
			return nil, fmt.Errorf("deploy: %s: %w", f.name, err)
		}
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return nil, fmt.Errorf("deploy: %w", err)
		}
		paths = append(paths, p)
	}
	return paths, nil
}

package deploy

import (
	"bytes"
	"fmt"

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

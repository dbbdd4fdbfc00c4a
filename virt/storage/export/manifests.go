package export

import (
	"bytes"
	"encoding/json"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/virtkit/virtkit/virt/storage/export/token"
)

// contentTypeYAML is the Accept value that asks for YAML manifests;
// anything else gets JSON.
const contentTypeYAML = "application/yaml"

// HeaderSecret is the auth-header-secret manifest of export: a Secret a
// CDI DataVolume names in secretExtraHeaders to send the export's token
// when it imports from the export.
func HeaderSecret(export, tok string) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: HeaderSecretName(export)},
		StringData: map[string]string{token.Key: AuthHeaderValue(tok)},
	}
}

// HeaderSecretName is the name of export's auth-header Secret manifest.
func HeaderSecretName(export string) string { return derived("header-secret", export) }

// manifestList writes objs as the Accept header of r asks: YAML documents
// each ended by "---", or a JSON List.
func manifestList(r *http.Request, objs []runtime.Object) ([]byte, string, error) {
	if r.Header.Get("Accept") == contentTypeYAML {
		var b bytes.Buffer
		for _, o := range objs {
			y, err := yaml.Marshal(o)
			if err != nil {
				return nil, "", err
			}
			b.Write(y)
			b.WriteString("---\n")
		}
		return b.Bytes(), contentTypeYAML, nil
	}
	b, err := json.MarshalIndent(struct {
		APIVersion string           `json:"apiVersion"`
		Kind       string           `json:"kind"`
		Items      []runtime.Object `json:"items"`
	}{"v1", "List", objs}, "", "    ")
	return b, "application/json", err
}

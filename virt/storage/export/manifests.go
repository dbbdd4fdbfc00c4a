package export

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"

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

// manifestList writes items (JSON objects) as the Accept header of r asks:
// YAML documents each ended by "---", or a JSON List.
func manifestList(r *http.Request, items []json.RawMessage) ([]byte, string, error) {
	if r.Header.Get("Accept") == contentTypeYAML {
		var b bytes.Buffer
		for _, o := range items {
			y, err := yaml.JSONToYAML(o)
			if err != nil {
				return nil, "", err
			}
			b.Write(y)
			b.WriteString("---\n")
		}
		return b.Bytes(), contentTypeYAML, nil
	}
	b, err := json.MarshalIndent(struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Items      []json.RawMessage `json:"items"`
	}{"v1", "List", items}, "", "    ")
	return b, "application/json", err
}

// ManifestFile is the file, in Config.ManifestDir, of the VM manifests for
// audience a: a JSON array of objects (EncodeManifests).
func ManifestFile(a Audience) string { return string(a) + ".json" }

// EncodeManifests is the content of a ManifestFile.
func EncodeManifests(objs []runtime.Object) ([]byte, error) { return json.Marshal(objs) }

// maxManifests bounds a ManifestFile the server reads.
const maxManifests = 4 << 20

// readManifests reads the ManifestFile of audience a in dir. The folder
// is the kubelet's (a ConfigMap volume), not the user's.
func readManifests(dir string, a Audience) ([]json.RawMessage, error) {
	f, err := os.Open(filepath.Join(dir, ManifestFile(a)))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxManifests+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxManifests {
		return nil, fmt.Errorf("%s: longer than %d bytes", f.Name(), maxManifests)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(b, &items); err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name(), err)
	}
	return items, nil
}

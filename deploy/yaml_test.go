package deploy_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/virtkit/virtkit/deploy"
)

// WriteRelease writes each manifest as a YAML stream whose documents read
// back as the objects given, in order, under the published file names.
func TestWriteRelease(t *testing.T) {
	ns := func(name string) *corev1.Namespace {
		return &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	dir := filepath.Join(t.TempDir(), "release")
	paths, err := deploy.WriteRelease(dir, []client.Object{ns("a"), ns("b")}, ns("c"))
	assert.NilError(t, err)
	assert.DeepEqual(t, paths, []string{filepath.Join(dir, deploy.OperatorManifestFile), filepath.Join(dir, deploy.KubeVirtCRFile)})
	for i, want := range [][]string{{"a", "b"}, {"c"}} {
		b, err := os.ReadFile(paths[i])
		assert.NilError(t, err)
		docs := strings.Split(strings.TrimPrefix(string(b), "---\n"), "---\n")
		assert.Equal(t, len(docs), len(want), string(b))
		for j, d := range docs {
			var got corev1.Namespace
			assert.NilError(t, yaml.Unmarshal([]byte(d), &got))
			assert.Equal(t, got.Name, want[j])
			assert.Equal(t, got.Kind, "Namespace")
		}
	}
	_, err = deploy.WriteRelease(filepath.Join(paths[0], "sub"), nil, ns("c"))
	assert.ErrorContains(t, err, "deploy: ")
}

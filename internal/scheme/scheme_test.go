package scheme

import (
	"testing"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestServed: a kind the mapper knows is served, one it does not is not,
// and an object of no kind of the scheme is an error.
func TestServed(t *testing.T) {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, meta.RESTScopeNamespace)
	for _, tc := range []struct {
		name    string
		obj     runtime.Object
		want    bool
		wantErr bool
	}{
		{"known", &corev1.Pod{}, true, false},
		{"CRD not installed", &snapshotv1.VolumeSnapshot{}, false, false},
		{"not of the scheme", &struct{ corev1.Pod }{}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Served(m, tc.obj)
			if got != tc.want || (err != nil) != tc.wantErr {
				t.Errorf("Served = %t, %v; want %t, error %t", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

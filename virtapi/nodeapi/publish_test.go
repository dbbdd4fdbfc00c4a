package nodeapi_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/virtkit/virtkit/virtapi/nodeapi"
)

// Publish writes what the locator reads, keeps the Node's other
// annotations, and refuses an address the locator would refuse.
func TestPublish(t *testing.T) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1",
		Annotations: map[string]string{"other": "kept"}}}).Build()
	if err := nodeapi.Publish(ctx, c, "n1", "https://127.0.0.1:9000"); err != nil {
		t.Fatal(err)
	}
	var n corev1.Node
	if err := c.Get(ctx, client.ObjectKey{Name: "n1"}, &n); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"other": "kept", nodeapi.HandlerAddressAnnotation: "https://127.0.0.1:9000"}
	if d := cmp.Diff(want, n.Annotations); d != "" {
		t.Errorf("annotations (-want +got):\n%s", d)
	}
	ep, err := nodeapi.NewAnnotationLocator(c).Locate(ctx, "n1")
	if err != nil || ep.URL.String() != "https://127.0.0.1:9000" {
		t.Errorf("Locate = %v, %v; want the published address", ep.URL, err)
	}
	if err := nodeapi.Publish(ctx, c, "n1", "ftp://x"); err == nil {
		t.Error("Publish(ftp://x) succeeded; want an error")
	}
	if err := nodeapi.Publish(ctx, c, "missing", "https://127.0.0.1:9000"); err == nil {
		t.Error("Publish on a missing Node succeeded; want an error")
	}
}

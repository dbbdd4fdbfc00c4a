package nodeapi_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/virtkit/virtkit/virtapi/nodeapi"
)

func TestAnnotationLocator(t *testing.T) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	node := func(name, addr string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if addr != "" {
			n.Annotations = map[string]string{nodeapi.HandlerAddressAnnotation: addr}
		}
		return n
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(
		node("url", "https://10.0.0.7:8186"), node("bare", "10.0.0.8:8186"), node("plain", "http://127.0.0.1:9000/prefix"),
		node("none", ""), node("bad", "ftp://x"),
	).Build()
	l := nodeapi.NewAnnotationLocator(c)
	cases := []struct {
		node, want  string
		unavailable bool // the error wraps ErrUnavailable
		err         bool
	}{
		{"url", "https://10.0.0.7:8186", false, false},
		{"bare", "https://10.0.0.8:8186", false, false},
		{"plain", "http://127.0.0.1:9000/prefix", false, false},
		{"none", "", true, true},
		{"missing", "", true, true},
		{"bad", "", false, true},
	}
	for _, tc := range cases {
		ep, err := l.Locate(context.Background(), tc.node)
		got := ""
		if err == nil {
			got = ep.URL.String()
		}
		type result struct {
			URL              string
			Err, Unavailable bool
		}
		if diff := cmp.Diff(result{tc.want, tc.err, tc.unavailable}, result{got, err != nil, errors.Is(err, nodeapi.ErrUnavailable)}); diff != "" {
			t.Errorf("node %s: %v (-want +got):\n%s", tc.node, err, diff)
		}
	}
}

package nodeapi_test

import (
	"context"
	"errors"
	"net/url"
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

// A handler is found by its pod: the ready virt-handler pod of virtkit's
// namespace on the node, at its pod address and its node-api port. A pod
// elsewhere, a pod that is not ready, and a Node annotation are not trusted.
func TestPodLocator(t *testing.T) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	ready := corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.1.5",
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	pod := func(ns, name, node string, st corev1.PodStatus, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "virt-handler",
				Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 8188}, {Name: nodeapi.PortName, ContainerPort: 8186}}}}},
			Status: st}
	}
	handler := map[string]string{"kubevirt.io": nodeapi.HandlerAppLabel}
	notReady := *ready.DeepCopy()
	notReady.Conditions[0].Status = corev1.ConditionFalse
	v6 := *ready.DeepCopy()
	v6.PodIP = "fd00::5"
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(
		pod("kubevirt", "virt-handler-a", "node-a", ready, handler),
		pod("kubevirt", "virt-handler-b", "node-b", notReady, handler),
		pod("kubevirt", "virt-handler-c", "node-c", v6, handler),
		// A tenant's pod that claims to be node-d's handler, and a
		// kubevirt pod without the label.
		pod("tenant", "virt-handler-d", "node-d", ready, handler),
		pod("kubevirt", "other-d", "node-d", ready, map[string]string{"app": "x"}),
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-d", Annotations: map[string]string{nodeapi.HandlerAddressAnnotation: "https://10.0.0.66:8186"}}},
	).Build()
	l := nodeapi.NewPodLocator(c, "kubevirt", nil)
	for node, want := range map[string]string{"node-a": "https://10.244.1.5:8186", "node-b": "", "node-c": "https://[fd00::5]:8186", "node-d": ""} {
		ep, err := l.Locate(context.Background(), node)
		got := ""
		if err == nil {
			got = ep.URL.String()
		} else if !errors.Is(err, nodeapi.ErrUnavailable) {
			t.Errorf("%s: %v, want ErrUnavailable", node, err)
		}
		if got != want {
			t.Errorf("%s: %q (%v), want %q", node, got, err, want)
		}
	}
}

// The client calls no http:// endpoint: the node API without TLS would
// let anyone on the network pause a guest or read its console.
func TestClientRefusesPlainHTTP(t *testing.T) {
	ctx := context.Background()
	u, err := url.Parse("http://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	c := nodeapi.NewClient(nodeapi.Endpoint{URL: u})
	if err := c.Pause(ctx, "ns", "vm"); !errors.Is(err, nodeapi.ErrInsecure) {
		t.Errorf("pause: %v, want ErrInsecure", err)
	}
	if _, err := c.Console(ctx, "ns", "vm"); !errors.Is(err, nodeapi.ErrInsecure) {
		t.Errorf("console: %v, want ErrInsecure", err)
	}
	// For tests, explicitly: the call is made (and finds nothing listening).
	err = nodeapi.NewClient(nodeapi.Endpoint{URL: u}, nodeapi.AllowPlainHTTP()).Pause(ctx, "ns", "vm")
	if errors.Is(err, nodeapi.ErrInsecure) || !errors.Is(err, nodeapi.ErrUnavailable) {
		t.Errorf("pause with AllowPlainHTTP: %v, want ErrUnavailable", err)
	}
}

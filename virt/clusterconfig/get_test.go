package clusterconfig_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/virtkit/virtkit/virt/clusterconfig"
)

func kubevirt(ns, name string, emulation bool) *virtv1.KubeVirt {
	kv := &virtv1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if emulation {
		kv.Spec.Configuration.DeveloperConfiguration = &virtv1.DeveloperConfiguration{UseEmulation: true}
	}
	return kv
}

func TestGet(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := virtv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		objects   []client.Object
		namespace string
		wantName  string // "" for no CR
		wantErr   error
	}{
		{name: "none", wantName: ""},
		{name: "one in the default namespace", objects: []client.Object{kubevirt("kubevirt", "kv", true)}, wantName: "kv"},
		{name: "one elsewhere is not seen", objects: []client.Object{kubevirt("other", "kv", true)}, wantName: ""},
		{name: "a named namespace", objects: []client.Object{kubevirt("other", "kv", true)}, namespace: "other", wantName: "kv"},
		{name: "two", objects: []client.Object{kubevirt("kubevirt", "a", false), kubevirt("kubevirt", "b", false)}, wantErr: clusterconfig.ErrSeveral},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.objects...).Build()
			kv, err := clusterconfig.Get(context.Background(), cl, tc.namespace)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Get: error %v, want %v", err, tc.wantErr)
			}
			got := ""
			if kv != nil {
				got = kv.Name
			}
			if diff := cmp.Diff(tc.wantName, got); diff != "" {
				t.Errorf("Get: CR name (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGetListError(t *testing.T) {
	boom := errors.New("apiserver down")
	_, err := clusterconfig.Get(context.Background(), failingLister{boom}, "")
	if !errors.Is(err, boom) {
		t.Fatalf("Get: error %v, want it to wrap %v", err, boom)
	}
}

type failingLister struct{ err error }

func (f failingLister) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return f.err
}

func TestNamespace(t *testing.T) {
	for in, want := range map[string]string{"": "kubevirt", "virtkit": "virtkit"} {
		if got := clusterconfig.Namespace(in); got != want {
			t.Errorf("Namespace(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestClientRateLimit(t *testing.T) {
	bucket := func(qps float32, burst int) *virtv1.ReloadableComponentConfiguration {
		return &virtv1.ReloadableComponentConfiguration{RestClient: &virtv1.RESTClientConfiguration{
			RateLimiter: &virtv1.RateLimiter{TokenBucketRateLimiter: &virtv1.TokenBucketRateLimiter{QPS: qps, Burst: burst}}}}
	}
	kv := &virtv1.KubeVirt{Spec: virtv1.KubeVirtSpec{Configuration: virtv1.KubeVirtConfiguration{
		HandlerConfiguration:    bucket(7, 9),
		ControllerConfiguration: bucket(300, 0), // a zero burst takes the default
		APIConfiguration:        &virtv1.ReloadableComponentConfiguration{},
	}}}
	for _, tc := range []struct {
		name string
		kv   *virtv1.KubeVirt
		c    clusterconfig.Client
		want clusterconfig.RateLimit
	}{
		{"no CR, handler", nil, clusterconfig.ClientHandler, clusterconfig.RateLimit{QPS: 50, Burst: 100}},
		{"no CR, controller", nil, clusterconfig.ClientController, clusterconfig.RateLimit{QPS: 200, Burst: 400}},
		{"handler set", kv, clusterconfig.ClientHandler, clusterconfig.RateLimit{QPS: 7, Burst: 9}},
		{"controller's QPS set", kv, clusterconfig.ClientController, clusterconfig.RateLimit{QPS: 300, Burst: 400}},
		{"api without a limiter", kv, clusterconfig.ClientAPI, clusterconfig.RateLimit{QPS: 200, Burst: 400}},
		{"webhook unset", kv, clusterconfig.ClientWebhook, clusterconfig.RateLimit{QPS: 200, Burst: 400}},
	} {
		if got := clusterconfig.ClientRateLimit(tc.kv, tc.c); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

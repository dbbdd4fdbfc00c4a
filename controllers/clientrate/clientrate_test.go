package clientrate_test

import (
	"context"
	"testing"

	"k8s.io/client-go/rest"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/virtkit/virtkit/controllers/clientrate"
	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/virt/clusterconfig"
)

func TestLimiterSetAndConfigure(t *testing.T) {
	l := clientrate.NewLimiter(clusterconfig.RateLimit{QPS: 2, Burst: 3})
	for range 3 {
		if !l.TryAccept() {
			t.Fatal("a burst of 3 refused one of its first 3 requests")
		}
	}
	if l.TryAccept() {
		t.Error("a 4th request at once was let through a burst of 3")
	}
	if l.Set(clusterconfig.RateLimit{QPS: 2, Burst: 3}) {
		t.Error("Set of the same rate reported a change")
	}
	if !l.Set(clusterconfig.RateLimit{QPS: 100, Burst: 5}) || l.QPS() != 100 {
		t.Errorf("Set to 100/s: QPS %v", l.QPS())
	}
	if !l.TryAccept() {
		t.Error("the new bucket refused its first request")
	}
	cfg := clientrate.Configure(&rest.Config{Host: "https://example"}, l)
	if cfg.RateLimiter != l || cfg.QPS != 100 || cfg.Burst != 5 {
		t.Errorf("Configure: %+v", cfg)
	}
}

// Follow sets the CR's rate, keeps it while the CR says the same, and goes
// back to KubeVirt's default when the CR's setting goes.
func TestFollowerSync(t *testing.T) {
	ctx := context.Background()
	kv := &virtv1.KubeVirt{}
	kv.Name, kv.Namespace = "kubevirt", "kubevirt"
	kv.Spec.Configuration.ControllerConfiguration = &virtv1.ReloadableComponentConfiguration{RestClient: &virtv1.RESTClientConfiguration{
		RateLimiter: &virtv1.RateLimiter{TokenBucketRateLimiter: &virtv1.TokenBucketRateLimiter{QPS: 30, Burst: 60}}}}
	cl := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(kv).Build()
	l := clientrate.NewLimiter(clusterconfig.DefaultRateLimit(clusterconfig.ClientController))
	f := clientrate.Follower{Reader: cl, Client: clusterconfig.ClientController, Limiter: l}
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := l.Rate(); got != (clusterconfig.RateLimit{QPS: 30, Burst: 60}) {
		t.Errorf("after the CR's setting: %+v", got)
	}
	kv.Spec.Configuration.ControllerConfiguration = nil
	if err := cl.Update(ctx, kv); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := l.Rate(), clusterconfig.DefaultRateLimit(clusterconfig.ClientController); got != want {
		t.Errorf("after the setting went: %+v, want the default %+v", got, want)
	}
	if err := cl.Delete(ctx, kv, client.PropagationPolicy("Background")); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(ctx); err != nil {
		t.Errorf("no CR: %v", err)
	}
}

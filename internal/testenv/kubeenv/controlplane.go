package kubeenv

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/virtkit/virtkit/internal/scheme"

	"github.com/virtkit/virtkit/internal/testenv"
)

// ControlPlaneEnv is a running etcd and kube-apiserver with the project's CRDs.
type ControlPlaneEnv struct {
	// Config reaches the apiserver as a cluster administrator.
	Config *rest.Config
	// Client is a controller-runtime client that knows the kubevirt.io types.
	Client client.Client
	// Env is the underlying envtest environment, for adding users or webhooks.
	Env *envtest.Environment
}

// ControlPlaneOption changes what ControlPlane starts.
type ControlPlaneOption func(*envtest.Environment)

// WithWebhooks installs webhook configurations. envtest points their
// service references at a local HTTPS server it prepares: serve the webhooks
// on Env.WebhookInstallOptions.LocalServingHost, LocalServingPort with the
// certificates in LocalServingCertDir.
func WithWebhooks(mutating []*admissionregistrationv1.MutatingWebhookConfiguration, validating []*admissionregistrationv1.ValidatingWebhookConfiguration) ControlPlaneOption {
	return func(env *envtest.Environment) {
		env.WebhookInstallOptions.MutatingWebhooks = append(env.WebhookInstallOptions.MutatingWebhooks, mutating...)
		env.WebhookInstallOptions.ValidatingWebhooks = append(env.WebhookInstallOptions.ValidatingWebhooks, validating...)
	}
}

// ControlPlane starts a real etcd and kube-apiserver from _output/bin (run
// `make kube-bins` first), installs deploy/crds and deploy/prerequisites (the
// VolumeSnapshot CRDs), and stops both when the test
// ends. Start-up takes about 4 s.
func ControlPlane(t testing.TB, opts ...ControlPlaneOption) *ControlPlaneEnv {
	t.Helper()
	testenv.Integration(t)
	bin := testenv.Output(t, "bin")
	for _, b := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			t.Fatalf("testenv: %s is missing from %s: run 'make kube-bins'", b, bin)
		}
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	// envtest's processes inherit the environment: mark them as ours.
	t.Setenv(testenv.OwnerEnv, strconv.Itoa(os.Getpid()))
	env := &envtest.Environment{
		BinaryAssetsDirectory: bin,
		CRDDirectoryPaths:     []string{filepath.Join(root, "deploy", "crds"), filepath.Join(root, "deploy", "prerequisites")},
		ErrorIfCRDPathMissing: true,
		Scheme:                scheme.New(),
	}
	for _, o := range opts {
		o(env)
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("testenv: starting etcd and kube-apiserver from %s: %v", bin, err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("testenv: stopping the control plane: %v", err)
		}
	})
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return &ControlPlaneEnv{Config: cfg, Client: c, Env: env}
}

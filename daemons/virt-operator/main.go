// Command virt-operator installs virtkit on a cluster from the KubeVirt CR
// of its namespace and keeps it in shape (operator), as
// KubeVirt's virt-operator: apply its release manifest, then a KubeVirt CR.
// The daemons' images are its own image's siblings (same registry and
// tag, from $OPERATOR_IMAGE) unless the CR names others.
//
//	virt-operator --namespace kubevirt --image registry.example/virtkit/virt-operator:v1
package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/virtkit/virtkit/deploy"
	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/operator"
)

func main() {
	var s operator.Settings
	ns := os.Getenv("POD_NAMESPACE")
	if ns == "" {
		ns = "kubevirt"
	}
	flag.StringVar(&s.Namespace, "namespace", ns, "the operator's namespace: the one whose KubeVirt CR it installs, and where the daemons run")
	image := flag.String("image", os.Getenv(deploy.OperatorImageEnv), "the operator's own image, REGISTRY/virt-operator:TAG; the daemons' images default to REGISTRY/NAME:TAG (default $"+deploy.OperatorImageEnv+")")
	flag.StringVar(&s.Version, "version", "", "the operator's version, reported in the CR's status (default: the image's tag)")
	flag.StringVar(&s.APIServer, "apiserver", "", "host:port of the apiserver for a cluster whose pods cannot reach the kubernetes Service; the daemons then use the host's network")
	flag.StringVar(&s.LauncherCapabilitiesCache, "launcher-capabilities-cache", "", "node folder the launchers share for libvirt's QEMU capability probe; empty: each launcher probes")
	flag.StringVar(&s.KubeletPodsDir, "kubelet-pods-dir", "", "node folder of the kubelet's pods, for nodes whose kubelet --root-dir is not /var/lib/kubelet; empty: /var/lib/kubelet/pods")
	flag.BoolVar(&s.Emulation, "emulation", false, "the nodes never use KVM: every handler runs its guests under software emulation whatever the KubeVirt CR's useEmulation says, for clusters whose /dev/kvm must not be used")
	flag.StringVar(&s.HandlerStateDir, "handler-state-dir", "", "node folder of virt-handler's records of its guests; empty: the default")
	leaderElect := flag.Bool("leader-elect", true, "run only while holding the lease, so several replicas can stand by")
	probes := flag.String("health-probe-bind-address", ":8445", "address of /healthz and /readyz")
	webhookPort := flag.Int("webhook-port", 8444, "port of the admission webhooks (TLS, with the certificate the operator issues itself); 0 serves none")
	metrics := flag.String("metrics-bind-address", "0", "address of /metrics over plain HTTP; 0 turns it off")
	flag.Parse()
	log := logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, nil))
	ctrl.SetLogger(log)
	if err := run(s, *image, *leaderElect, *probes, *metrics, *webhookPort); err != nil {
		log.Error(err, "virt-operator failed")
		os.Exit(1)
	}
}

// splitImage takes REGISTRY/virt-operator:TAG (or @DIGEST) apart.
func splitImage(image string) (registry, tag string, err error) {
	i := strings.LastIndex(image, "/"+deploy.OperatorName)
	if i <= 0 {
		return "", "", fmt.Errorf("--image %q: want REGISTRY/%s:TAG", image, deploy.OperatorName)
	}
	registry, rest := image[:i], image[i+1+len(deploy.OperatorName):]
	switch {
	case strings.HasPrefix(rest, ":") && len(rest) > 1:
		return registry, rest[1:], nil
	case strings.HasPrefix(rest, "@") && len(rest) > 1:
		return registry, rest[1:], nil
	}
	return "", "", fmt.Errorf("--image %q: want REGISTRY/%s:TAG", image, deploy.OperatorName)
}

func run(s operator.Settings, image string, leaderElect bool, probes, metrics string, webhookPort int) error {
	if image == "" {
		return errors.New("--image (or $" + deploy.OperatorImageEnv + ") is required")
	}
	var err error
	if s.Registry, s.Tag, err = splitImage(image); err != nil {
		return err
	}
	if s.Version == "" {
		s.Version = s.Tag
	}
	r, err := operator.New(s)
	if err != nil {
		return err
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	opts := ctrl.Options{
		Scheme:                  scheme.New(),
		Cache:                   operator.CacheOptions(),
		LeaderElection:          leaderElect,
		LeaderElectionID:        "virt-operator.kubevirt.io",
		LeaderElectionNamespace: s.Namespace,
		Metrics:                 metricsserver.Options{BindAddress: metrics},
		HealthProbeBindAddress:  probes,
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return err
	}
	if webhookPort != 0 {
		if err := operator.AddWebhook(mgr, s.Namespace, webhook.Options{Port: webhookPort}); err != nil {
			return err
		}
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}

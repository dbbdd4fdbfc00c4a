// Command virt-controller runs virtkit's cluster controllers (VirtualMachine
// and VirtualMachineInstance, see controllers/) in a controller-runtime
// manager with leader election, configured from its flags and the KubeVirt
// CR of its namespace, which it reads again for each VMI and launcher pod it
// creates. It serves Prometheus metrics over plain HTTP on
// --metrics-bind-address (default :8443, KubeVirt's port) at /metrics:
// reconcile counts and latencies, workqueue depth, its requests to the
// apiserver and the cluster's VMIs, VMs and migrations (docs/metrics.md).
//
//	virt-controller --namespace kubevirt --launcher-image REGISTRY/virt-launcher:TAG
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/virtkit/virtkit/controllers"
	"github.com/virtkit/virtkit/controllers/clientrate"
	"github.com/virtkit/virtkit/controllers/nodehealth"
	"github.com/virtkit/virtkit/internal/scheme"
	virtmetrics "github.com/virtkit/virtkit/metrics"
	"github.com/virtkit/virtkit/virt/clusterconfig"
	"github.com/virtkit/virtkit/virtapi/nodeapi"
	"github.com/virtkit/virtkit/virtapi/subresources"
)

func main() {
	var (
		namespace   = flag.String("namespace", "kubevirt", "namespace of the KubeVirt CR and of the leader election lease")
		image       = flag.String("launcher-image", "", "image of virt-launcher for launcher pods (required)")
		importer    = flag.String("importer-image", "", "image of virt-importer for DataVolume importer pods; empty: no DataVolume controller")
		emulation   = flag.Bool("emulation", false, "software emulation even when the KubeVirt CR does not ask for it")
		leaderElect = flag.Bool("leader-elect", true, "run only while holding the lease, so several replicas can stand by")
		metrics     = flag.String("metrics-bind-address", ":8443", "address of /metrics (plain HTTP; KubeVirt's port); 0 turns it off")
		probes      = flag.String("health-probe-bind-address", ":8081", "address of /healthz and /readyz")
		heartbeat   = flag.Duration("node-heartbeat-timeout", nodehealth.DefaultHeartbeatTimeout, "a node whose virt-handler has not beaten for this long is unresponsive: unschedulable, and its VMIs whose launchers ended fail")
		notReady    = flag.Duration("node-not-ready-grace", nodehealth.DefaultNotReadyGrace, "an unresponsive node not Ready for this long is down: all its VMIs fail and their launcher pods are force-deleted")
		uploadCA    = flag.String("upload-client-ca-file", "", "CA (PEM) of the upload proxy's client certificate (virt-api's --handler-client-cert-file), which DataVolume upload pods require; empty: uploads wait, unconfigured")
		uploadName  = flag.String("upload-client-name", nodeapi.ClientName, "common name of the upload proxy's client certificate")
		uploadURL   = flag.String("upload-proxy-url", "", "where users reach virt-api's upload proxy, for the CDIConfig's status (KubeVirt's virtctl image-upload reads it); empty: unknown")
		capsCache   = flag.String("launcher-capabilities-cache", "", "node folder the launchers share for libvirt's QEMU capability probe; empty: each launcher probes")
	)
	flag.Parse()
	log := logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, nil))
	ctrl.SetLogger(log)
	health := nodehealth.Options{HeartbeatTimeout: *heartbeat, NotReadyGrace: *notReady}
	base := controllers.Config{LauncherImage: *image, ImporterImage: *importer, LauncherCapabilitiesCache: *capsCache, Emulation: *emulation,
		KubeVirtNamespace: *namespace, NodeHealth: health, UploadClientName: *uploadName, UploadProxyURL: *uploadURL}
	if *uploadCA != "" {
		ca, err := os.ReadFile(*uploadCA)
		if err != nil {
			log.Error(err, "--upload-client-ca-file")
			os.Exit(2)
		}
		base.UploadClientCA = ca
	}
	if err := run(base, *leaderElect, *metrics, *probes); err != nil {
		log.Error(err, "virt-controller failed")
		os.Exit(1)
	}
}

// run runs the controllers of base, configured by the KubeVirt CR of
// base.KubeVirtNamespace.
func run(base controllers.Config, leaderElect bool, metrics, probes string) error {
	namespace := base.KubeVirtNamespace
	if base.LauncherImage == "" {
		return fmt.Errorf("--launcher-image is required")
	}
	restCfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	// /metrics serves controller-runtime's registry: the reconcile and
	// workqueue series, this process's requests and the cluster's VMIs,
	// VMs and migrations.
	requests, err := virtmetrics.NewClientRequests(ctrlmetrics.Registry)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	restCfg = requests.Wrap("virt-controller", restCfg)
	ctx := ctrl.SetupSignalHandler()
	// The client's rate is the CR's controllerConfiguration, followed live.
	restCfg, follow, err := clientrate.Setup(ctx, restCfg, namespace, clusterconfig.ClientController, ctrl.Log.WithName("clientrate"))
	if err != nil {
		return err
	}
	// Online snapshots freeze guests through virt-api's freeze verb.
	if base.Freezer, err = subresources.NewClient(restCfg); err != nil {
		return fmt.Errorf("subresources client: %w", err)
	}
	s := scheme.New()
	reader, err := client.New(restCfg, client.Options{Scheme: s})
	if err != nil {
		return err
	}
	readCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	// The flags are the base the KubeVirt CR is applied over each time the
	// controllers need it; one reading now refuses a cluster with several.
	_, err = controllers.ReadConfig(readCtx, reader, namespace, base)
	cancel()
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(restCfg, ctrl.Options{
		Scheme:                  s,
		LeaderElection:          leaderElect,
		LeaderElectionID:        "virt-controller.kubevirt.io",
		LeaderElectionNamespace: namespace,
		Metrics:                 metricsserver.Options{BindAddress: metrics},
		HealthProbeBindAddress:  probes,
	})
	if err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	if err := mgr.Add(follow); err != nil {
		return err
	}
	if err := controllers.AddToManager(mgr, base); err != nil {
		return err
	}
	if err := controllers.AddMetrics(mgr, ctrlmetrics.Registry, virtmetrics.WithLogger(ctrl.Log.WithName("metrics"))); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	return mgr.Start(ctx)
}

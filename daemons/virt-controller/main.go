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
	"github.com/virtkit/virtkit/controllers/export"
	"github.com/virtkit/virtkit/controllers/nodehealth"
	"github.com/virtkit/virtkit/deploy/certs/certfiles"
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
		exportImage = flag.String("export-server-image", "", "image of virt-exportserver for VirtualMachineExport server pods; empty: no export controller")
		exportCA    = flag.String("export-ca-cert-file", "", "certificate (PEM) of the export CA, which signs export servers' certificates; read again when it changes (required with --export-server-image)")
		exportKey   = flag.String("export-ca-key-file", "", "key (PEM) of --export-ca-cert-file")
		proxyHost   = flag.String("export-proxy-host", "", "host[:port] where users reach the export proxy, for exports' external links; empty: internal links only")
		proxyCA     = flag.String("export-proxy-ca-file", "", "CA (PEM) of the export proxy's certificate, which external links carry")
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
	if err := exportFlags(&base, *exportImage, *exportCA, *exportKey, *proxyHost, *proxyCA); err != nil {
		log.Error(err, "export flags")
		os.Exit(2)
	}
	if err := run(base, *leaderElect, *metrics, *probes); err != nil {
		log.Error(err, "virt-controller failed")
		os.Exit(1)
	}
}

// exportFlags sets base's export controller from the flags: the server
// image, a signer over the export CA's files, the proxy of external links.
func exportFlags(base *controllers.Config, image, caCert, caKey, proxyHost, proxyCA string) error {
	if image == "" {
		if caCert != "" || proxyHost != "" {
			return fmt.Errorf("--export-ca-cert-file and --export-proxy-host need --export-server-image")
		}
		return nil
	}
	if caCert == "" || caKey == "" {
		return fmt.Errorf("--export-server-image needs --export-ca-cert-file and --export-ca-key-file")
	}
	src, err := certfiles.New(caCert, caKey, "", certfiles.WithLogger(ctrl.Log.WithName("export-ca")))
	if err != nil {
		return fmt.Errorf("--export-ca-cert-file: %w", err)
	}
	base.ExportServerImage, base.ExportSigner = image, export.PairSigner{Pair: src.Pair}
	if proxyHost != "" {
		if proxyCA == "" {
			return fmt.Errorf("--export-proxy-host needs --export-proxy-ca-file")
		}
		ca, err := os.ReadFile(proxyCA)
		if err != nil {
			return fmt.Errorf("--export-proxy-ca-file: %w", err)
		}
		base.ExportProxyHost, base.ExportProxyCA = proxyHost, ca
	}
	return nil
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

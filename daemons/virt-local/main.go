// Command virt-local runs virtkit on one machine: a real Kubernetes control
// plane (etcd, kube-apiserver, kube-scheduler, kube-controller-manager from
// `make kube-bins`), virt-api, the controllers, and local nodes that run
// launcher pods as host processes, and an OCI registry on loopback that
// image volumes (containerDisks) are pulled from, all kept under one data
// directory (package local/cluster).
//
//	virt-local up       start in the background and wait until it is ready
//	virt-local down     stop it: guests shut down gracefully, nothing left running
//	virt-local status   whether it runs, its kubeconfig, registry, metrics address and nodes
//	virt-local serve    run in the foreground (what up starts)
//	virt-local push DISK REFERENCE
//	                    push a disk image file as a containerDisk to the registry
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/virtkit/virtkit/local/cluster"
	"github.com/virtkit/virtkit/local/registry"
	"github.com/virtkit/virtkit/virt/domain"
	domainlibvirt "github.com/virtkit/virtkit/virt/domain/libvirt"
)

func usage() {
	fmt.Fprintf(os.Stderr, `usage: virt-local up|down|status|serve [flags]
       virt-local push [flags] DISK REFERENCE

  up       start virt-local in the background; returns when it is ready
  down     stop it (guests shut down gracefully)
  status   say whether it runs, and how to reach it
  serve    run in the foreground until SIGTERM or SIGINT
  push     push the disk image file DISK (qcow2 or raw) as a containerDisk
           image to the registry, e.g. as localhost:5000/vms/fedora:41

flags:
`)
	flag.PrintDefaults()
}

func main() {
	if len(os.Args) < 2 || strings.HasPrefix(os.Args[1], "-") {
		usage()
		os.Exit(2)
	}
	verb := os.Args[1]
	fs := flag.NewFlagSet("virt-local", flag.ExitOnError)
	fs.Usage = usage
	o := defaultOptions()
	o.register(fs)
	_ = fs.Parse(os.Args[2:])
	flag.CommandLine = fs

	var err error
	switch verb {
	case "up":
		err = up(o)
	case "down":
		err = down(o)
	case "status":
		err = status(o)
	case "serve":
		err = serve(o)
	case "push":
		err = push(o, fs.Args())
	default:
		usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "virt-local:", err)
		os.Exit(1)
	}
}

// options are the flags every verb shares.
type options struct {
	dataDir, binDir, cniBinDir, nodes string
	apiPort, etcdPort, virtAPIPort    int
	exportProxyPort                   int
	registryAddr                      string
	metricsAddr                       string
	kubelet, containerdBinDir         string
	imagesDir                         string
	split, operator                   bool
	timeout                           time.Duration
}

func defaultOptions() options {
	bin := "."
	if exe, err := os.Executable(); err == nil {
		bin = filepath.Dir(exe)
	}
	return options{dataDir: "/var/lib/virt-local", binDir: bin, cniBinDir: filepath.Join(bin, "..", "cni", "bin"),
		containerdBinDir: filepath.Join(bin, "..", "containerd", "bin"), imagesDir: filepath.Join(bin, "..", "images"),
		nodes: "local", apiPort: 6443, etcdPort: 2379, virtAPIPort: 8443, exportProxyPort: 8444, registryAddr: registry.DefaultAddr, metricsAddr: cluster.DefaultMetricsAddr,
		timeout: 5 * time.Minute}
}

func (o *options) register(fs *flag.FlagSet) {
	fs.StringVar(&o.dataDir, "data-dir", o.dataDir, "folder of all state (control plane, nodes, pods)")
	fs.StringVar(&o.binDir, "bin-dir", o.binDir, "folder of etcd, kube-apiserver, kube-scheduler, kube-controller-manager and virt-launcher")
	fs.StringVar(&o.cniBinDir, "cni-bin-dir", o.cniBinDir, "folder of the CNI plugins (bridge, host-local, loopback)")
	fs.StringVar(&o.nodes, "nodes", o.nodes, "comma-separated names of the local nodes")
	fs.IntVar(&o.apiPort, "apiserver-port", o.apiPort, "loopback port of kube-apiserver")
	fs.IntVar(&o.etcdPort, "etcd-port", o.etcdPort, "loopback port of etcd (it also uses the next two)")
	fs.IntVar(&o.virtAPIPort, "virt-api-port", o.virtAPIPort, "port of virt-api: on loopback, or with --kubelet its pod's port on the host")
	fs.IntVar(&o.exportProxyPort, "export-proxy-port", o.exportProxyPort, "loopback port of the export proxy, where VirtualMachineExports' external links point")
	fs.StringVar(&o.registryAddr, "registry-addr", o.registryAddr, "loopback host:port of the image registry (images are pushed there as localhost:PORT/NAME:TAG)")
	fs.StringVar(&o.metricsAddr, "metrics-addr", o.metricsAddr, "host:port of /metrics (plain HTTP), every component's Prometheus series; port 0 picks a free one (status tells it), 0 turns it off")
	fs.StringVar(&o.kubelet, "kubelet", o.kubelet, "name of a real node to start as well: a real kubelet with containerd, whose pods are containers (empty: none)")
	fs.StringVar(&o.containerdBinDir, "containerd-bin-dir", o.containerdBinDir, "folder of containerd, containerd-shim-runc-v2 and ctr, for --kubelet")
	fs.StringVar(&o.imagesDir, "images-dir", o.imagesDir, "OCI image layout of make images (the pause image of --kubelet's pods)")
	fs.BoolVar(&o.split, "split", o.split, "run virt-api, virt-exportproxy, virt-controller and each node's virt-handler as processes of their own from --bin-dir (restarted when they exit; logs in DATA-DIR/daemons), not inside virt-local; not with --kubelet")
	fs.BoolVar(&o.operator, "operator", o.operator, "with --kubelet: install nothing of virtkit and start no local node (--nodes is ignored); write virt-operator's release manifest and a KubeVirt CR for this cluster into DATA-DIR/deploy, to kubectl apply")
	fs.DurationVar(&o.timeout, "timeout", o.timeout, "how long up and down wait")
}

func (o options) args() []string {
	return []string{"--data-dir", o.dataDir, "--bin-dir", o.binDir, "--cni-bin-dir", o.cniBinDir, "--nodes", o.nodes,
		"--apiserver-port", fmt.Sprint(o.apiPort), "--etcd-port", fmt.Sprint(o.etcdPort), "--virt-api-port", fmt.Sprint(o.virtAPIPort),
		"--export-proxy-port", fmt.Sprint(o.exportProxyPort),
		"--registry-addr", o.registryAddr, "--metrics-addr", o.metricsAddr,
		"--kubelet", o.kubelet, "--containerd-bin-dir", o.containerdBinDir, "--images-dir", o.imagesDir, "--split=" + fmt.Sprint(o.split),
		"--operator=" + fmt.Sprint(o.operator)}
}

func (o options) pidFile() string   { return filepath.Join(o.dataDir, "virt-local.pid") }
func (o options) readyFile() string { return filepath.Join(o.dataDir, "virt-local.ready") }
func (o options) logFile() string   { return filepath.Join(o.dataDir, "virt-local.log") }

// registry is the address of the running serve's registry, which its
// ready file records; o.registryAddr before it is ready.
func (o options) registry() string {
	b, err := os.ReadFile(o.readyFile())
	if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); err == nil && len(lines) > 1 {
		return strings.TrimSpace(lines[1])
	}
	return o.registryAddr
}

// metrics is the address the running serve serves /metrics on, which its
// ready file records; empty when it serves none or is not ready.
func (o options) metrics() string {
	b, err := os.ReadFile(o.readyFile())
	if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); err == nil && len(lines) > 2 {
		return strings.TrimSpace(lines[2])
	}
	return ""
}

func (o options) clusterConfig(log logr.Logger) cluster.Config {
	var nodes []string
	for _, n := range strings.Split(o.nodes, ",") {
		if n = strings.TrimSpace(n); n != "" && !o.operator {
			nodes = append(nodes, n)
		}
	}
	return cluster.Config{DataDir: o.dataDir, BinDir: o.binDir, CNIBinDir: o.cniBinDir, Nodes: nodes,
		APIServerPort: o.apiPort, EtcdPort: o.etcdPort, VirtAPIPort: o.virtAPIPort, ExportProxyPort: o.exportProxyPort, RegistryAddr: o.registryAddr, MetricsAddr: o.metricsAddr, Logger: log,
		KubeletNode: o.kubelet, ContainerdBinDir: o.containerdBinDir, ImagesDir: o.imagesDir, Split: o.split, Operator: o.operator,
		Connector: func(ctx context.Context, uri string) (domain.Manager, error) {
			return domainlibvirt.New(ctx, uri, domainlibvirt.WithLogger(log.WithName("libvirt")))
		}}
}

// serve runs the cluster in the foreground until SIGTERM or SIGINT.
func serve(o options) error {
	if err := os.MkdirAll(o.dataDir, 0o700); err != nil {
		return err
	}
	log := newLogger(os.Stderr, time.Now) // up sends stderr to the log file
	// The process's one controller-runtime logger, named so that its
	// entries are not taken for virt-local's progress.
	ctrl.SetLogger(log.WithName("controller-runtime"))
	if pid, ok := running(o); ok {
		return fmt.Errorf("virt-local already runs on %s (pid %d); `virt-local down` first", o.dataDir, pid)
	}
	if err := os.WriteFile(o.pidFile(), []byte(fmt.Sprint(os.Getpid())), 0o644); err != nil {
		return err
	}
	defer os.Remove(o.pidFile())
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	upCtx, cancel := context.WithTimeout(ctx, o.timeout)
	c, err := cluster.Up(upCtx, o.clusterConfig(log))
	cancel()
	if err != nil {
		return err
	}
	// The kubeconfig's path, the registry's address (see options.registry),
	// then the metrics address (options.metrics).
	if err := os.WriteFile(o.readyFile(), []byte(c.Kubeconfig()+"\n"+c.Registry()+"\n"+c.MetricsAddr()+"\n"), 0o644); err != nil {
		return errors.Join(err, c.Down(context.Background()))
	}
	log.Info("ready", "kubeconfig", c.Kubeconfig(), "registry", c.Registry(), "metrics", c.MetricsAddr())
	<-ctx.Done()
	os.Remove(o.readyFile())
	log.Info("stopping")
	downCtx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	if err := c.Down(downCtx); err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}

func nopLogger() logr.Logger { return logr.Discard() }

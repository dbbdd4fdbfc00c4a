package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/virtkit/virtkit/deploy"
	"github.com/virtkit/virtkit/internal/freeport"
	"github.com/virtkit/virtkit/internal/spawn"
	"github.com/virtkit/virtkit/internal/supervise"
	"github.com/virtkit/virtkit/virtapi/nodeapi"
)

// Split mode: virt-api, virt-controller and each local node's handler run
// as processes of their own (Config.Split), each supervised as a kubelet
// keeps a container running, so that one can be killed alone.

// Timing of split mode's daemons.
const (
	// daemonRestartPause is the first pause before a dead daemon is started
	// again; it doubles up to daemonMaxRestartPause while it keeps dying.
	daemonRestartPause    = time.Second
	daemonMaxRestartPause = 10 * time.Second
	// daemonStopGrace is how long a daemon gets to stop on SIGTERM.
	daemonStopGrace = 20 * time.Second
	// daemonReadyTimeout bounds the wait for a daemon's port at start.
	daemonReadyTimeout = time.Minute
)

// HandlerDaemon is the name of node's handler among Cluster.Daemons.
func HandlerDaemon(node string) string { return deploy.HandlerName + "-" + node }

// daemons are split mode's processes.
type daemons struct {
	spawn  *spawn.Spawner
	cancel context.CancelFunc
	ctx    context.Context

	mu    sync.Mutex
	procs map[string]*supervise.Process
}

func newDaemons() *daemons {
	ctx, cancel := context.WithCancel(context.Background())
	return &daemons{spawn: spawn.New(), ctx: ctx, cancel: cancel, procs: map[string]*supervise.Process{}}
}

// startDaemon starts split mode's daemon name (startProcess).
func (c *Cluster) startDaemon(name, bin string, args ...string) (*supervise.Process, error) {
	return c.startProcess(c.split, name, bin, args...)
}

// startProcess starts the process name of set from BinDir/bin with args
// and supervises it; its output goes to DataDir/daemons/<name>.log. It
// reaches the apiserver as the in-process components do (ComponentsUser).
func (c *Cluster) startProcess(set *daemons, name, bin string, args ...string) (*supervise.Process, error) {
	p, err := supervise.New(supervise.Config{Name: name, Path: filepath.Join(c.cfg.BinDir, bin),
		Args:    append([]string{"--kubeconfig", c.cfg.componentsKubeconfig()}, args...),
		LogFile: filepath.Join(c.cfg.DaemonLogDir(), name+".log"), Spawner: set.spawn,
		Logger: c.cfg.Logger.WithName(name), MinPause: daemonRestartPause, MaxPause: daemonMaxRestartPause})
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if _, err := os.Stat(filepath.Join(c.cfg.BinDir, bin)); err != nil {
		return nil, fmt.Errorf("cluster: %s: %w (run `make daemons csi-bins`)", name, err)
	}
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	set.mu.Lock()
	set.procs[name] = p
	set.mu.Unlock()
	go p.Supervise(set.ctx)
	return p, nil
}

// startHandlerProcess starts ln's handler as a process serving its node
// API on a loopback port, behind the same mutual TLS as in-process, and
// waits until the port answers.
func (c *Cluster) startHandlerProcess(ctx context.Context, ln *localNode) error {
	pki := c.cp.Config().PKI()
	if err := pki.EnsureServingCert(localHandlerCert, nodeapi.ServerName(Namespace)); err != nil {
		return err
	}
	port, err := freeport.Range(1)
	if err != nil {
		return fmt.Errorf("cluster: node %s: node API port: %w", ln.name, err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	args := []string{"--node-name", ln.name, "--pods-dir", c.cfg.PodsDir(ln.name), "--state-dir", filepath.Join(c.cfg.DataDir, "handlers", ln.name),
		"--node-api-address", addr,
		"--tls-cert-file", pki.Cert(localHandlerCert), "--tls-key-file", pki.Key(localHandlerCert), "--client-ca-file", pki.CACert(),
		// The cluster's /metrics gathers only this process's series; the
		// local nodes register no device plugins and need no probes.
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--device-plugin-dir", "0"}
	// Migrations to the node come to its handler's own loopback port.
	certFile, keyFile, caFile, err := c.migrationCert(ln.name)
	if err != nil {
		return err
	}
	migPort, err := freeport.Range(1)
	if err != nil {
		return fmt.Errorf("cluster: node %s: migration port: %w", ln.name, err)
	}
	// The local nodes share the host's interfaces: none is one node's
	// migration network.
	args = append(args, "--migration-address", "127.0.0.1:"+strconv.Itoa(migPort), "--migration-interface", "",
		"--migration-cert-file", certFile, "--migration-key-file", keyFile, "--migration-ca-file", caFile)
	if c.config.Emulation {
		args = append(args, "--emulation")
	}
	if c.cfg.HeartbeatInterval > 0 {
		args = append(args, "--heartbeat-interval", c.cfg.HeartbeatInterval.String())
	}
	p, err := c.startDaemon(HandlerDaemon(ln.name), deploy.HandlerName, args...)
	if err != nil {
		return err
	}
	ln.apiURL = &url.URL{Scheme: "https", Host: addr}
	return waitPort(ctx, p, addr)
}

// startAPIProcess starts virt-api as a process on VirtAPIPort, finding each
// local node's handler at its node API's address, and waits until the
// apiserver reaches it.
func (c *Cluster) startAPIProcess(ctx context.Context) error {
	pki := c.cp.Config().PKI()
	if err := pki.EnsureClientCert(virtAPIClientCert, nodeapi.ClientName); err != nil {
		return err
	}
	addr := "127.0.0.1:" + strconv.Itoa(c.cfg.VirtAPIPort)
	args := []string{"--listen", addr, "--namespace", Namespace,
		"--tls-cert-file", pki.Cert(virtAPICert), "--tls-private-key-file", pki.Key(virtAPICert),
		"--handler-ca-file", pki.CACert(), "--handler-client-cert-file", pki.Cert(virtAPIClientCert),
		"--handler-client-key-file", pki.Key(virtAPIClientCert), "--metrics-bind-address", "0",
		"--privileged-users", ComponentsUser}
	for _, n := range c.nodes {
		args = append(args, "--handler-address", n.name+"="+n.apiURL.String())
	}
	p, err := c.startDaemon(deploy.APIName, deploy.APIName, args...)
	if err != nil {
		return err
	}
	if err := waitPort(ctx, p, addr); err != nil {
		return err
	}
	if err := c.startExportProxyProcess(ctx); err != nil {
		return err
	}
	cl, err := c.adminClient()
	if err != nil {
		return err
	}
	return waitAPIService(ctx, cl)
}

// startExportProxyProcess starts virt-exportproxy as a process on
// ExportProxyPort, with virt-api's certificate (as in-process), and waits
// until it serves.
func (c *Cluster) startExportProxyProcess(ctx context.Context) error {
	pki := c.cp.Config().PKI()
	addr := c.cfg.ExportProxyHost()
	p, err := c.startDaemon(deploy.ExportProxyName, deploy.ExportProxyName, "--listen", addr,
		"--tls-cert-file", pki.Cert(virtAPICert), "--tls-private-key-file", pki.Key(virtAPICert), "--export-ca-file", pki.ExportCACert())
	if err != nil {
		return err
	}
	return waitPort(ctx, p, addr)
}

// startControllerProcess starts virt-controller as a process, with leader
// election as on a cluster: a restarted one takes over once the dead one's
// lease expires.
func (c *Cluster) startControllerProcess() error {
	pki := c.cp.Config().PKI()
	args := []string{"--namespace", Namespace,
		"--launcher-image", c.cfg.LauncherImage, "--importer-image", c.cfg.ImporterImage, "--launcher-capabilities-cache", c.base.LauncherCapabilitiesCache,
		"--upload-client-ca-file", pki.CACert(), "--upload-client-name", nodeapi.ClientName,
		"--upload-proxy-url", c.cfg.UploadProxyURL(),
		"--export-server-image", c.cfg.ExportServerImage, "--export-ca-cert-file", pki.ExportCACert(), "--export-ca-key-file", pki.ExportCAKey(),
		"--export-proxy-host", c.cfg.ExportProxyHost(), "--export-proxy-ca-file", pki.CACert(),
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0"}
	if h := c.cfg.NodeHealth; h.HeartbeatTimeout > 0 {
		args = append(args, "--node-heartbeat-timeout", h.HeartbeatTimeout.String())
	}
	if h := c.cfg.NodeHealth; h.NotReadyGrace > 0 {
		args = append(args, "--node-not-ready-grace", h.NotReadyGrace.String())
	}
	_, err := c.startDaemon(deploy.ControllerName, deploy.ControllerName, args...)
	return err
}

// waitPort waits until addr accepts connections, p exits, or
// daemonReadyTimeout passes.
func waitPort(ctx context.Context, p *supervise.Process, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, daemonReadyTimeout)
	defer cancel()
	var d net.Dialer
	for {
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			conn.Close()
			return nil
		}
		if !p.Status().Running {
			return fmt.Errorf("cluster: %s exited before serving %s; the end of %s:\n%s", p.Name(), addr, p.LogFile(), supervise.Tail(p.LogFile(), 5))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: %s not serving %s within %s: %w", p.Name(), addr, daemonReadyTimeout, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stopDaemon stops the daemon name, if split mode runs it.
func (c *Cluster) stopDaemon(name string) error {
	if c.split == nil {
		return nil
	}
	return c.split.stop(name)
}

// stopDaemons stops what is left of split mode's processes.
func (c *Cluster) stopDaemons() error {
	if c.split == nil {
		return nil
	}
	return c.split.stopAll()
}

// stop stops the process name of d, if it runs one.
func (d *daemons) stop(name string) error {
	d.mu.Lock()
	p, ok := d.procs[name]
	delete(d.procs, name)
	d.mu.Unlock()
	if !ok {
		return nil
	}
	return p.Stop(daemonStopGrace)
}

// stopAll stops every process of d, and d.
func (d *daemons) stopAll() error {
	d.mu.Lock()
	var names []string
	for name := range d.procs {
		names = append(names, name)
	}
	d.mu.Unlock()
	var errs []error
	for _, name := range names {
		errs = append(errs, d.stop(name))
	}
	d.cancel()
	d.spawn.Close()
	return errors.Join(errs...)
}

// DaemonStatus is a daemon process of a split cluster at one moment.
type DaemonStatus struct {
	// PID is its process ID; 0 while none runs.
	PID int
	// Running tells whether it runs now.
	Running bool
	// Restarts counts its starts after the first.
	Restarts int
	// Log is its log file.
	Log string
}

// Daemons reports the daemon processes of a split cluster by name:
// virt-api, virt-exportproxy, virt-controller and, for each local node,
// HandlerDaemon(node).
// It is empty when the daemons run in virt-local's own process.
func (c *Cluster) Daemons() map[string]DaemonStatus {
	out := map[string]DaemonStatus{}
	if c.split == nil {
		return out
	}
	c.split.mu.Lock()
	defer c.split.mu.Unlock()
	for name, p := range c.split.procs {
		s := p.Status()
		out[name] = DaemonStatus{PID: s.PID, Running: s.Running, Restarts: s.Restarts, Log: p.LogFile()}
	}
	return out
}

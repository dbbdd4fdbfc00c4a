package node

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// startProbes runs the container's readiness probe (its result is the
// container's ready flag) and liveness probe (its failure kills the
// container, which then restarts as the restart policy says) until ctx ends.
// Startup probes are not run.
func (r *podRun) startProbes(ctx context.Context, wg *sync.WaitGroup, c *corev1.Container, proc Process) {
	if pr := c.ReadinessProbe; pr != nil {
		wg.Go(func() {
			r.probeLoop(ctx, c, proc, pr, func(ok bool) {
				changed := false
				r.container(c.Name, false, func(s *corev1.ContainerStatus) {
					if s.State.Running != nil && s.Ready != ok {
						s.Ready, changed = ok, true
					}
				})
				if changed {
					r.publish()
				}
			})
		})
	}
	if pr := c.LivenessProbe; pr != nil {
		wg.Go(func() {
			r.probeLoop(ctx, c, proc, pr, func(ok bool) {
				if !ok {
					r.log.Info("liveness probe failed; killing the container", "container", c.Name)
					_ = r.p.opts.runner.Kill(ctx, proc.Ref())
				}
			})
		})
	}
}

// probeLoop probes every period and calls result when the outcome crosses
// the success or failure threshold (and once at the first crossing).
func (r *podRun) probeLoop(ctx context.Context, c *corev1.Container, proc Process, pr *corev1.Probe, result func(bool)) {
	period := time.Duration(max(pr.PeriodSeconds, 1)) * time.Second
	if pr.PeriodSeconds == 0 {
		period = 10 * time.Second
	}
	timeout := time.Duration(max(pr.TimeoutSeconds, 1)) * time.Second
	successes, failures := max(pr.SuccessThreshold, 1), max(pr.FailureThreshold, 1)
	if pr.FailureThreshold == 0 {
		failures = 3
	}
	wait := time.Duration(pr.InitialDelaySeconds) * time.Second
	var ok, bad int32
	last := -1     // unknown
	var bin string // an exec probe's command, found once per container start
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = period
		pctx, cancel := context.WithTimeout(ctx, timeout)
		good, why := r.probe(pctx, c, proc, pr, &bin)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if good {
			ok, bad = ok+1, 0
			if ok >= successes && last != 1 {
				last = 1
				result(true)
			}
		} else {
			ok, bad = 0, bad+1
			if bad >= failures && last != 0 {
				last = 0
				// As the kubelet says it: what the probe answered, cut short.
				r.log.Info("probe failed", "container", c.Name, "output", cut(why, 512))
				result(false)
			}
		}
	}
}

// cut is s, at most n bytes of it.
func cut(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// probe runs one probe. `test -e|-f|-d|-s PATH` is answered by looking at
// the file through the process's view (/proc/PID/root) without starting a
// process; other exec probes run in the container's namespaces; HTTP and
// TCP probes go to the pod's IP. bin caches where an exec probe's command
// was found: found once, not at every period.
func (r *podRun) probe(ctx context.Context, c *corev1.Container, proc Process, pr *corev1.Probe, bin *string) (bool, string) {
	switch {
	case pr.Exec != nil:
		cmd := pr.Exec.Command
		if len(cmd) == 0 {
			return false, "exec probe without a command"
		}
		if len(cmd) == 3 && (cmd[0] == "test" || cmd[0] == "/usr/bin/test" || cmd[0] == "/bin/test") && filepath.IsAbs(cmd[2]) {
			st, err := statIn(proc.Root(), cmd[2])
			switch cmd[1] {
			case "-e":
				return err == nil, ""
			case "-f":
				return err == nil && st.Mode().IsRegular(), ""
			case "-d":
				return err == nil && st.IsDir(), ""
			case "-s":
				return err == nil && st.Size() > 0, ""
			}
		}
		// The command is found as the container's own is: the launcher
		// image's binaries are the node's (Config.BinDirs).
		if *bin == "" {
			found, err := lookPath(cmd[0], r.p.cfg.BinDirs, "")
			if err != nil {
				return false, err.Error()
			}
			*bin = found
		}
		code, out, err := r.p.opts.runner.Exec(ctx, proc, append([]string{*bin}, cmd[1:]...))
		if err != nil {
			return false, err.Error()
		}
		return code == 0, string(out)
	case pr.HTTPGet != nil:
		g := pr.HTTPGet
		port, err := probePort(c, g.Port)
		if err != nil {
			return false, err.Error()
		}
		host := g.Host
		if host == "" {
			host = r.podIP()
		}
		scheme := "http"
		if g.Scheme == corev1.URISchemeHTTPS {
			scheme = "https"
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s://%s%s", scheme, net.JoinHostPort(host, strconv.Itoa(port)), g.Path), nil)
		if err != nil {
			return false, err.Error()
		}
		for _, h := range g.HTTPHeaders {
			req.Header.Add(h.Name, h.Value)
		}
		// As the kubelet: an HTTPS probe does not check the certificate,
		// and keeps no connection open between probes.
		tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true} //nolint:gosec // kubelet semantics
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode >= 200 && resp.StatusCode < 400, resp.Status
	case pr.TCPSocket != nil:
		port, err := probePort(c, pr.TCPSocket.Port)
		if err != nil {
			return false, err.Error()
		}
		host := pr.TCPSocket.Host
		if host == "" {
			host = r.podIP()
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return false, err.Error()
		}
		conn.Close()
		return true, ""
	default:
		return true, "probe kind not supported by the local node: counted as success"
	}
}

// statIn stats path as a process whose root is root sees it: symlinks,
// absolute ones included, resolve inside root (the kernel would resolve an
// absolute symlink met under /proc/PID/root against our own root).
func statIn(root, path string) (os.FileInfo, error) {
	rest := strings.Split(filepath.Clean("/"+path), "/")[1:]
	cur := "/" // resolved so far, inside root
	for links := 0; len(rest) > 0; {
		name := rest[0]
		rest = rest[1:]
		if name == "" || name == "." {
			continue
		}
		if name == ".." {
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, name)
		st, err := os.Lstat(filepath.Join(root, next))
		if err != nil {
			return nil, err
		}
		if st.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		if links++; links > 40 {
			return nil, &os.PathError{Op: "stat", Path: path, Err: syscall.ELOOP}
		}
		target, err := os.Readlink(filepath.Join(root, next))
		if err != nil {
			return nil, err
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return os.Stat(filepath.Join(root, cur))
}

func (r *podRun) podIP() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.facts.PodIPs) > 0 {
		return r.facts.PodIPs[0]
	}
	return r.p.hostIP
}

// probePort resolves a probe's port, by number or by the container's port name.
func probePort(c *corev1.Container, p intstr.IntOrString) (int, error) {
	if p.Type == intstr.Int {
		return p.IntValue(), nil
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	return 0, fmt.Errorf("container %q has no port named %q", c.Name, p.StrVal)
}

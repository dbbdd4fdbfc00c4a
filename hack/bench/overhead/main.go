// Command overhead measures what a VM costs beyond its guest, side by side in
// one run (`make bench-overhead`), for the launcher's libvirtd as configured
// by default (QEMU and secret drivers only) and with every driver loaded:
//
//   - memory: it starts N virt-launcher processes, plays the handler for each
//     (define and start the test guest, 1 vCPU, -memory MiB, software
//     emulation), waits until every guest is ready, then reads the resident
//     and proportional set sizes of each launcher, its libvirtd and its QEMU;
//   - start-up: -runs times, from launcher start to the domain running (the
//     guest's own boot excluded: the clock stops when libvirt reports the
//     domain running), and reports the median.
//
// It ends with one machine-readable line:
//
//	overhead_mib_per_vm=<n> launcher_to_running_s=<n> qemu_rss_mib=<n>
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/virtkit/virtkit/hack/bench/internal/benchkit"
	"github.com/virtkit/virtkit/internal/testguest"
	"github.com/virtkit/virtkit/virt/domain"
	domainlibvirt "github.com/virtkit/virtkit/virt/domain/libvirt"
	"github.com/virtkit/virtkit/virt/launcher"
	"github.com/virtkit/virtkit/virt/libvirtd"
)

func main() {
	var (
		bin    = flag.String("launcher", "../../_output/bin/virt-launcher", "virt-launcher binary")
		repo   = flag.String("repo", "../..", "checkout root (for the test guest); the default fits a run from hack/bench")
		n      = flag.Int("n", 4, "launchers running at once for the memory figures")
		runs   = flag.Int("runs", 20, "start-up runs for the median")
		memMiB = flag.Uint("memory", 256, "guest memory in MiB")
	)
	flag.Parse()
	if err := run(*bin, *repo, *n, *runs, *memMiB); err != nil {
		fmt.Fprintln(os.Stderr, "bench-overhead:", err)
		os.Exit(1)
	}
}

func run(bin, repo string, n, runs int, memMiB uint) error {
	ctx := context.Background()
	root, err := filepath.Abs(repo)
	if err != nil {
		return err
	}
	bin, err = filepath.Abs(bin)
	if err != nil {
		return err
	}
	guest, err := testguest.Build(ctx, root)
	if err != nil {
		return err
	}
	base, err := os.MkdirTemp("/tmp", "vkb-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(base)
	// The launchers run QEMU as the qemu user (107), which must search its
	// way to their folders, as through a node's.
	if err := os.Chmod(base, 0o711); err != nil {
		return err
	}
	cache := filepath.Join(root, "_output", "cache", "libvirt")

	// Two daemon configurations side by side: the launcher's default (QEMU and
	// secret drivers only) and every installed driver, as a system libvirtd
	// loads them.
	configs := []struct{ name, drivers string }{
		{"default drivers", strings.Join(libvirtd.DefaultDrivers(), ",")},
		{"all drivers", libvirtd.AllDrivers},
	}

	fmt.Printf("memory: %d launchers per configuration, each with a %d MiB test guest (1 vCPU, TCG), all ready at once\n", n, memMiB)
	var vms [2][]*vm
	defer func() {
		for _, list := range vms {
			for _, v := range list {
				v.stop()
			}
		}
	}()
	for i := range n {
		for c, cfg := range configs {
			v, err := startVM(ctx, bin, filepath.Join(base, fmt.Sprintf("m%d%d", c, i)), cache, cfg.drivers, guest, memMiB, true)
			if err != nil {
				return err
			}
			vms[c] = append(vms[c], v)
		}
	}
	var overhead, pss, qemu [2]float64
	fmt.Printf("%-16s %-4s %14s %14s %14s %14s %14s\n", "config", "vm", "launcher_rss", "libvirtd_rss", "overhead_rss", "overhead_pss", "qemu_rss")
	for c, cfg := range configs {
		for i, v := range vms[c] {
			l, ld, q := v.pids()
			lr, ldr, qr := benchkit.RSSMiB(l), benchkit.RSSMiB(ld), benchkit.RSSMiB(q)
			p := pssMiB(l) + pssMiB(ld)
			fmt.Printf("%-16s %-4d %10.1f MiB %10.1f MiB %10.1f MiB %10.1f MiB %10.1f MiB\n", cfg.name, i, lr, ldr, lr+ldr, p, qr)
			overhead[c] += (lr + ldr) / float64(n)
			pss[c] += p / float64(n)
			qemu[c] += qr / float64(n)
		}
	}
	for _, list := range vms {
		for _, v := range list {
			v.stop()
		}
	}
	vms = [2][]*vm{}
	for c, cfg := range configs {
		fmt.Printf("mean per VM, %s: launcher+libvirtd %.1f MiB RSS (%.1f MiB PSS), QEMU %.1f MiB RSS\n", cfg.name, overhead[c], pss[c], qemu[c])
	}
	fmt.Printf("ratio default/all drivers: RSS %.2f\n", overhead[0]/overhead[1])

	fmt.Printf("start-up: %d runs per configuration, alternating, of launcher start -> domain running (guest boot excluded)\n", runs)
	var times, readies [2][]float64
	var phases [2][4][]float64 // ready->connected, ->defined, ->Start returned, ->running
	for i := range runs {
		for c, cfg := range configs {
			begin := time.Now()
			v, err := startVM(ctx, bin, filepath.Join(base, fmt.Sprintf("s%d%d", c, i)), cache, cfg.drivers, guest, memMiB, false)
			if err != nil {
				return err
			}
			times[c] = append(times[c], v.runningAt.Sub(begin).Seconds())
			readies[c] = append(readies[c], v.readyAt.Sub(begin).Seconds())
			for k, span := range [][2]time.Time{{v.readyAt, v.connectedAt}, {v.connectedAt, v.definedAt}, {v.definedAt, v.startedAt}, {v.startedAt, v.runningAt}} {
				phases[c][k] = append(phases[c][k], span[1].Sub(span[0]).Seconds())
			}
			v.stop()
		}
	}
	for c, cfg := range configs {
		fmt.Printf("%s: launcher start -> ready: median %.3f s; -> running: median %.3f s, min %.3f s, max %.3f s\n",
			cfg.name, medianOf(readies[c]), medianOf(times[c]), slices.Min(times[c]), slices.Max(times[c]))
		fmt.Printf("  medians after ready: connect %.3f s, define %.3f s, start %.3f s, until running %.3f s\n",
			medianOf(phases[c][0]), medianOf(phases[c][1]), medianOf(phases[c][2]), medianOf(phases[c][3]))
	}
	fmt.Printf("ratio default/all drivers: start -> running %.2f\n", medianOf(times[0])/medianOf(times[1]))
	fmt.Printf("overhead_mib_per_vm=%.1f launcher_to_running_s=%.3f qemu_rss_mib=%.1f\n", overhead[0], medianOf(times[0]), qemu[0])
	return nil
}

func medianOf(xs []float64) float64 {
	s := slices.Clone(xs)
	sort.Float64s(s)
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

// vm is one launcher process with its guest.
type vm struct {
	cmd    *exec.Cmd
	layout launcher.Layout
	name   string
	m      domain.Manager
	// When each step of the start-up ended.
	readyAt, connectedAt, definedAt, startedAt, runningAt time.Time
	stderr                                                bytes.Buffer
}

func startVM(ctx context.Context, bin, dir, cache, drivers string, guest testguest.Artifacts, memMiB uint, waitReady bool) (*vm, error) {
	v := &vm{layout: launcher.Layout{Root: dir}, name: launcher.DomainName("bench", filepath.Base(dir))}
	v.cmd = exec.Command(bin, "--dir", dir, "--namespace", "bench", "--name", filepath.Base(dir), "--grace-period", "0s",
		"--libvirt-cache-dir", cache, "--libvirt-drivers", drivers)
	v.cmd.Stderr = &v.stderr
	if err := v.cmd.Start(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		if b, err := os.ReadFile(v.layout.ReadyFile()); err == nil && len(b) > 0 {
			break
		}
		if ctx.Err() != nil {
			v.stop()
			return nil, fmt.Errorf("launcher %s not ready: %s", dir, v.stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	v.readyAt = time.Now()
	uri, _ := os.ReadFile(v.layout.ReadyFile())
	m, err := domainlibvirt.New(ctx, strings.TrimSpace(string(uri)))
	if err != nil {
		v.stop()
		return nil, err
	}
	v.m = m
	v.connectedAt = time.Now()
	doc := testguest.Domain(v.name, guest, memMiB, v.layout.SerialLog())
	if err := m.Define(ctx, doc); err != nil {
		v.stop()
		return nil, err
	}
	v.definedAt = time.Now()
	if err := m.Start(ctx, v.name, domain.StartOptions{}); err != nil {
		v.stop()
		return nil, err
	}
	v.startedAt = time.Now()
	for {
		st, _, err := m.State(ctx, v.name)
		if err == nil && st == domain.StateRunning {
			v.runningAt = time.Now()
			break
		}
		if ctx.Err() != nil {
			v.stop()
			return nil, fmt.Errorf("domain %s not running", v.name)
		}
		time.Sleep(2 * time.Millisecond)
	}
	if waitReady {
		if _, err := testguest.WaitLine(ctx, v.layout.SerialLog(), regexp.MustCompile(`^`+testguest.ReadyMarker+`$`)); err != nil {
			v.stop()
			return nil, err
		}
	}
	return v, nil
}

// pids returns the launcher's, its libvirtd's and its QEMU's process IDs.
func (v *vm) pids() (launcherPID, libvirtdPID, qemuPID int) {
	read := func(p string) int {
		b, _ := os.ReadFile(p)
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return n
	}
	run := filepath.Join(v.layout.LibvirtDir(), "run")
	return v.cmd.Process.Pid, read(filepath.Join(run, "libvirtd.pid")), read(filepath.Join(run, "qemu", v.name+".pid"))
}

func (v *vm) stop() {
	if v.m != nil {
		v.m.Close()
		v.m = nil
	}
	if v.cmd.ProcessState == nil {
		_ = v.cmd.Process.Signal(syscall.SIGTERM)
		_ = v.cmd.Wait()
	}
}

// pssMiB is a process's proportional set size: shared pages (libraries
// mapped by many processes) divided among their users.
func pssMiB(pid int) float64 { return benchkit.ProcKiB(pid, "smaps_rollup", "Pss:") / 1024 }

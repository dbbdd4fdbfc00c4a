// Command overhead measures what a VM costs beyond its guest, side by side in
// one run (`make bench-overhead`):
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
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/virtkit/virtkit/internal/testguest"
	"github.com/virtkit/virtkit/virt/domain"
	domainlibvirt "github.com/virtkit/virtkit/virt/domain/libvirt"
	"github.com/virtkit/virtkit/virt/launcher"
)

func main() {
	var (
		bin    = flag.String("launcher", "_output/bin/virt-launcher", "virt-launcher binary")
		repo   = flag.String("repo", ".", "checkout root (for the test guest)")
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
	cache := filepath.Join(root, "_output", "cache", "libvirt")

	fmt.Printf("memory: %d launchers, each with a %d MiB test guest (1 vCPU, TCG), all ready at once\n", n, memMiB)
	var vms []*vm
	defer func() {
		for _, v := range vms {
			v.stop()
		}
	}()
	for i := range n {
		v, err := startVM(ctx, bin, filepath.Join(base, "m"+strconv.Itoa(i)), cache, guest, memMiB, true)
		if err != nil {
			return err
		}
		vms = append(vms, v)
	}
	fmt.Printf("%-4s %14s %14s %14s %14s %14s\n", "vm", "launcher_rss", "libvirtd_rss", "overhead_rss", "overhead_pss", "qemu_rss")
	var sumOverhead, sumOverheadPSS, sumQEMU float64
	for i, v := range vms {
		l, ld, q := v.pids()
		lr, ldr, qr := rssMiB(l), rssMiB(ld), rssMiB(q)
		pss := pssMiB(l) + pssMiB(ld)
		fmt.Printf("%-4d %11.1f MiB %11.1f MiB %11.1f MiB %11.1f MiB %11.1f MiB\n", i, lr, ldr, lr+ldr, pss, qr)
		sumOverhead += lr + ldr
		sumOverheadPSS += pss
		sumQEMU += qr
	}
	for _, v := range vms {
		v.stop()
	}
	vms = nil
	overhead := sumOverhead / float64(n)
	qemu := sumQEMU / float64(n)
	fmt.Printf("mean per VM: launcher+libvirtd %.1f MiB RSS (%.1f MiB PSS), QEMU %.1f MiB RSS\n", overhead, sumOverheadPSS/float64(n), qemu)

	fmt.Printf("start-up: %d runs of launcher start -> domain running (guest boot excluded)\n", runs)
	var times []float64
	for i := range runs {
		begin := time.Now()
		v, err := startVM(ctx, bin, filepath.Join(base, "s"+strconv.Itoa(i)), cache, guest, memMiB, false)
		if err != nil {
			return err
		}
		times = append(times, v.runningAt.Sub(begin).Seconds())
		v.stop()
	}
	sort.Float64s(times)
	median := times[len(times)/2]
	if len(times)%2 == 0 {
		median = (times[len(times)/2-1] + times[len(times)/2]) / 2
	}
	fmt.Printf("launcher start -> running: median %.3f s, min %.3f s, max %.3f s\n", median, times[0], times[len(times)-1])
	fmt.Printf("overhead_mib_per_vm=%.1f launcher_to_running_s=%.3f qemu_rss_mib=%.1f\n", overhead, median, qemu)
	return nil
}

// vm is one launcher process with its guest.
type vm struct {
	cmd       *exec.Cmd
	layout    launcher.Layout
	name      string
	m         domain.Manager
	runningAt time.Time
	stderr    bytes.Buffer
}

func startVM(ctx context.Context, bin, dir, cache string, guest testguest.Artifacts, memMiB uint, waitReady bool) (*vm, error) {
	v := &vm{layout: launcher.Layout{Root: dir}, name: launcher.DomainName("bench", filepath.Base(dir))}
	v.cmd = exec.Command(bin, "--dir", dir, "--namespace", "bench", "--name", filepath.Base(dir), "--grace-period", "0s", "--libvirt-cache-dir", cache)
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
	uri, _ := os.ReadFile(v.layout.ReadyFile())
	m, err := domainlibvirt.New(ctx, strings.TrimSpace(string(uri)))
	if err != nil {
		v.stop()
		return nil, err
	}
	v.m = m
	doc := testguest.Domain(v.name, guest, memMiB, v.layout.SerialLog())
	if err := m.Define(ctx, doc); err != nil {
		v.stop()
		return nil, err
	}
	if err := m.Start(ctx, v.name, domain.StartOptions{}); err != nil {
		v.stop()
		return nil, err
	}
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

// rssMiB is a process's resident set size (VmRSS).
func rssMiB(pid int) float64 { return statusKiB(pid, "/status", "VmRSS:") / 1024 }

// pssMiB is a process's proportional set size: shared pages (libraries
// mapped by many processes) divided among their users.
func pssMiB(pid int) float64 { return statusKiB(pid, "/smaps_rollup", "Pss:") / 1024 }

func statusKiB(pid int, file, key string) float64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + file)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, key) {
			f := strings.Fields(line)
			if len(f) >= 2 {
				v, _ := strconv.ParseFloat(f[1], 64)
				return v
			}
		}
	}
	return 0
}

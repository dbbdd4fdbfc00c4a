// Command bootguest is what `make run` does until virt-local boots
// VMs from manifests on a local control plane: it starts a private libvirtd,
// boots the test guest under software emulation, and prints the guest's
// serial console until Ctrl-C (or, with -until-ready, until the guest is up),
// then shuts the guest down through ACPI and stops the daemon, leaving
// nothing running.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"libvirt.org/go/libvirt"

	"github.com/virtkit/virtkit/internal/testguest"
	"github.com/virtkit/virtkit/virt/libvirtd"
)

func main() {
	var (
		dir        = flag.String("dir", "/tmp/virtkit-run", "state folder of the private libvirtd and the console log (short: it holds a unix socket)")
		repo       = flag.String("repo", ".", "checkout root, for building the test guest")
		memMiB     = flag.Uint("memory", 256, "guest memory in MiB")
		fromDisk   = flag.Bool("disk", false, "boot the BIOS disk image through syslinux instead of the kernel directly")
		untilReady = flag.Bool("until-ready", false, "shut the guest down as soon as it reports ready")
	)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *dir, *repo, *memMiB, *fromDisk, *untilReady); err != nil {
		fmt.Fprintln(os.Stderr, "bootguest:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, dir, repo string, memMiB uint, fromDisk, untilReady bool) (err error) {
	root, err := filepath.Abs(repo)
	if err != nil {
		return err
	}
	fmt.Println("==> building the test guest (hack/guest) if needed")
	guest, err := testguest.Build(ctx, root)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("clean %s: %w", dir, err)
	}
	fmt.Println("==> starting a private libvirtd in", dir)
	startCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	d, err := libvirtd.Start(startCtx, libvirtd.Config{Dir: dir})
	if err != nil {
		return err
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		err = errors.Join(err, d.Stop(stopCtx))
	}()

	conn, err := libvirt.NewConnect(d.URI())
	if err != nil {
		return fmt.Errorf("connect %s: %w", d.URI(), err)
	}
	defer conn.Close()

	console := filepath.Join(dir, "console.log")
	doc := testguest.Domain("virtkit-test-guest", guest, memMiB, console)
	if fromDisk {
		overlay := filepath.Join(dir, "root.qcow2")
		if err := testguest.CreateOverlay(ctx, guest.Disk, overlay); err != nil {
			return err
		}
		testguest.BootFromDisk(doc, overlay)
	}
	xml, err := doc.Marshal()
	if err != nil {
		return err
	}
	dom, err := conn.DomainDefineXML(xml)
	if err != nil {
		return fmt.Errorf("define: %w", err)
	}
	defer dom.Free()
	defer func() { _ = dom.Undefine() }()
	started := time.Now()
	if err := dom.Create(); err != nil {
		return fmt.Errorf("start: %w (QEMU log: %s)", err, filepath.Join(d.Config().Paths().QEMULogDir, "virtkit-test-guest.log"))
	}
	fmt.Printf("==> guest started (software emulation, %d MiB); its console follows, Ctrl-C shuts it down\n", memMiB)

	printer := &consolePrinter{path: console, ready: regexp.MustCompile(`^` + testguest.ReadyMarker)}
	ready := make(chan struct{})
	followDone := make(chan struct{})
	follow, stopFollow := context.WithCancel(ctx)
	go func() {
		defer close(followDone)
		for follow.Err() == nil {
			if printer.drain() {
				close(ready)
				printer.ready = nil
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()

	select {
	case <-ready:
		fmt.Printf("==> guest ready %.1f s after start\n", time.Since(started).Seconds())
		if !untilReady {
			<-ctx.Done()
		}
	case <-ctx.Done():
	}
	fmt.Println("==> shutting the guest down (ACPI power button)")
	shutdownErr := shutdown(dom, 30*time.Second)
	stopFollow()
	<-followDone
	printer.drain() // the guest's last lines
	if shutdownErr != nil {
		return shutdownErr
	}
	fmt.Println("==> guest powered off; libvirtd stopping")
	return nil
}

// shutdown presses the guest's ACPI power button and waits for it to power
// off; after limit it pulls the plug.
func shutdown(dom *libvirt.Domain, limit time.Duration) error {
	if err := dom.ShutdownFlags(libvirt.DOMAIN_SHUTDOWN_ACPI_POWER_BTN); err != nil {
		return fmt.Errorf("ACPI shutdown: %w", err)
	}
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		state, _, err := dom.GetState()
		if err != nil {
			return err
		}
		if state == libvirt.DOMAIN_SHUTOFF {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Println("==> no power-off after", limit, "- destroying the guest")
	return dom.Destroy()
}

// consolePrinter copies the console log to stdout as it grows.
type consolePrinter struct {
	path    string
	offset  int64
	partial string
	// ready, while set, is the line that drain reports seeing.
	ready *regexp.Regexp
}

// drain prints the lines added since the last call and reports whether one
// of them matched ready.
func (p *consolePrinter) drain() (sawReady bool) {
	f, err := os.Open(p.path)
	if err != nil {
		return false
	}
	defer f.Close()
	if _, err := f.Seek(p.offset, io.SeekStart); err != nil {
		return false
	}
	b, _ := io.ReadAll(f)
	p.offset += int64(len(b))
	lines := strings.Split(p.partial+string(b), "\n")
	p.partial = lines[len(lines)-1]
	for _, l := range lines[:len(lines)-1] {
		l = strings.TrimRight(l, "\r")
		fmt.Println("guest| " + l)
		if p.ready != nil && p.ready.MatchString(l) {
			sawReady = true
		}
	}
	return sawReady
}

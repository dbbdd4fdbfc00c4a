// Command virt-launcher is the entry point of a VMI's launcher pod: it runs
// virt/launcher with the libvirt domain Manager and exits with the guest.
//
//	virt-launcher --dir /var/run/virtkit/UID --namespace NS --name VMI --grace-period 180
//
// With --probe-host-cpu DIR it runs no VMI: it writes what a guest's CPU
// can be on this node into DIR for the handler's node labels (see
// virt/launcher/contract) and exits. With --hold it runs none either: it
// holds a volume hotplug attachment pod's volumes, sleeping until SIGTERM
// or SIGINT, and exits 0. With --bind-only it exits 0 at once: the command
// of a VMI's temporary pod, whose scheduling binds claims that wait for
// their first consumer.
//
// Exit codes and the per-VMI folder are documented in docs/sdk/launcher.md.
// SIGTERM or SIGINT asks for a stop: a graceful guest shutdown within the
// grace period, then destroy.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"

	"github.com/virtkit/virtkit/virt/domain"
	domainlibvirt "github.com/virtkit/virtkit/virt/domain/libvirt"
	"github.com/virtkit/virtkit/virt/launcher"
	"github.com/virtkit/virtkit/virt/launcher/contract"
	"github.com/virtkit/virtkit/virt/libvirtd"
)

func main() {
	var (
		dir       = flag.String(contract.FlagDir, "", "per-VMI folder shared with the handler (required; keep it short)")
		namespace = flag.String(contract.FlagNamespace, "", "the VMI's namespace (required)")
		name      = flag.String(contract.FlagName, "", "the VMI's name (required)")
		grace     = flag.Duration(contract.FlagGracePeriod, 30*time.Second, "graceful shutdown time on SIGTERM before the guest is destroyed")
		binary    = flag.String("libvirtd", "", "libvirtd binary (default: libvirtd on PATH or in /usr/sbin)")
		cacheDir  = flag.String(contract.FlagLibvirtCacheDir, "", "shared folder for QEMU capability probes (default: private)")
		configDir = flag.String(contract.FlagLibvirtConfigDir, "", "when not root: a short private folder for libvirt's configuration and guest state, whose sockets would not fit below --dir (default: below --dir)")
		drivers   = flag.String("libvirt-drivers", strings.Join(libvirtd.DefaultDrivers(), ","), "libvirt connection drivers to load, comma-separated, or \"all\"")
		termLog   = flag.String("termination-log", "/dev/termination-log", "where to write the exit reason for Kubernetes (skipped when not writable)")
		verbose   = flag.Bool("v", false, "debug logging")
		probe     = flag.String(contract.FlagProbeHostCPU, "", "instead of running a VMI: write what a guest's CPU can be on this node into this folder, and exit (the node labeller)")
		virtType  = flag.String(contract.FlagVirtType, contract.VirtTypeKVM, "with --"+contract.FlagProbeHostCPU+": the domain type to ask about, kvm, qemu (software emulation) or auto (kvm where /dev/kvm exists)")
		hold      = flag.Bool(contract.FlagHold, false, "instead of running a VMI: sleep until SIGTERM or SIGINT and exit 0 (a volume hotplug attachment pod's command)")
		bindOnly  = flag.Bool(contract.FlagBindOnly, false, "instead of running a VMI: exit 0 at once (a temporary pod's command, whose scheduling binds claims that wait for their first consumer)")
		ping      = flag.Bool(contract.FlagGuestAgentPing, false, "instead of running a VMI: probe the running VMI's guest agent (guest-ping), exit 0 when it answers")
		exec      = flag.Bool(contract.FlagGuestExec, false, "instead of running a VMI: run the command after -- in the running VMI's guest through its agent, exit 0 when it exits 0")
		timeout   = flag.Duration(contract.FlagProbeTimeout, time.Second, "with --"+contract.FlagGuestAgentPing+" or --"+contract.FlagGuestExec+": how long the guest may take")
	)
	flag.Parse()
	if *ping || *exec {
		if *dir == "" || *namespace == "" || *name == "" || *ping == *exec {
			fmt.Fprintln(os.Stderr, "virt-launcher: a probe needs --dir, --namespace, --name and one of --"+contract.FlagGuestAgentPing+" and --"+contract.FlagGuestExec)
			os.Exit(launcher.ExitSetupFailed)
		}
		if err := vmiProbe(context.Background(), *dir, launcher.DomainName(*namespace, *name), *timeout, *ping, flag.Args()); err != nil {
			fmt.Fprintln(os.Stderr, "virt-launcher: probe failed:", err)
			os.Exit(contract.ExitProbeFailed)
		}
		return
	}
	if *bindOnly {
		fmt.Println("virt-launcher: bound the pod's claims; no VMI runs here")
		return
	}
	if *hold {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		<-ctx.Done()
		stop()
		return
	}
	if *probe != "" {
		log := logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, nil))
		lv := libvirtd.Config{Binary: *binary, CacheDir: *cacheDir, Drivers: strings.Split(*drivers, ","),
			// Not root: a session daemon, as a launcher that is not root
			// runs, so that what it caches is what such launchers use.
			Session: os.Geteuid() != 0}
		if err := probeHostCPU(context.Background(), *probe, *virtType, lv, log); err != nil {
			fmt.Fprintln(os.Stderr, "virt-launcher: host CPU probe:", err)
			os.Exit(launcher.ExitSetupFailed)
		}
		return
	}
	if *dir == "" || *namespace == "" || *name == "" {
		fmt.Fprintln(os.Stderr, "virt-launcher: --dir, --namespace and --name are required")
		flag.Usage()
		os.Exit(launcher.ExitSetupFailed)
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	lc := libvirtd.Config{Binary: *binary, CacheDir: *cacheDir, Drivers: strings.Split(*drivers, ",")}
	if os.Geteuid() == 0 {
		// QEMU runs as KubeVirt's qemu user under libvirt's DAC driver.
		lc.QEMUAs = &libvirtd.Owner{UID: contract.QEMUUser, GID: contract.QEMUGroup}
	} else {
		// A launcher that is not root (a pod run as the qemu user, as
		// KubeVirt's): a session daemon, and QEMU as this same user.
		lc.Session, lc.ConfigDir = true, *configDir
	}
	cfg := launcher.Config{
		Layout:      launcher.Layout{Root: *dir},
		Domain:      launcher.DomainName(*namespace, *name),
		GracePeriod: *grace,
		Libvirtd:    lc,
	}
	connect := func(ctx context.Context, uri string) (domain.Manager, error) {
		return domainlibvirt.New(ctx, uri, domainlibvirt.WithLogger(log))
	}
	res := launcher.Run(ctx, cfg, connect, launcher.WithLogger(log))
	if f, err := os.OpenFile(*termLog, os.O_WRONLY|os.O_TRUNC, 0); err == nil {
		fmt.Fprintln(f, res.Reason)
		f.Close()
	}
	fmt.Fprintln(os.Stderr, "virt-launcher:", res)
	os.Exit(res.Code)
}

package launcher_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/virtkit/virtkit/virt/domain"
	"github.com/virtkit/virtkit/virt/domain/fake"
	"github.com/virtkit/virtkit/virt/launcher"
)

// Run a launcher in-process: it starts a private libvirtd, waits for the
// handler to start the VMI's domain on its socket, and returns when the
// guest ends or after a graceful stop on SIGTERM. The binary
// daemons/virt-launcher passes virt/domain/libvirt's constructor as the
// connector; any domain.Manager works.
func ExampleRun() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	connect := func(ctx context.Context, uri string) (domain.Manager, error) {
		return fake.New(), nil // virt/domain/libvirt.New(ctx, uri) in the real binary
	}
	res := launcher.Run(ctx, launcher.Config{
		Layout:      launcher.Layout{Root: "/run/virtkit/vm1"},
		Domain:      launcher.DomainName("default", "vm1"),
		GracePeriod: 30 * time.Second,
	}, connect)
	fmt.Println(res)
	os.Exit(res.Code)
}

// The per-VMI folder is the handler-launcher contract.
func ExampleLayout() {
	l := launcher.Layout{Root: "/run/virtkit/vm1"}
	fmt.Println(l.LibvirtDir())
	fmt.Println(l.ReadyFile())
	fmt.Println(l.LibvirtURI())
	fmt.Println(l.VNCSocket())
	fmt.Println(launcher.DomainName("default", "vm1"))
	// Output:
	// /run/virtkit/vm1/libvirt
	// /run/virtkit/vm1/ready
	// qemu:///session?socket=/run/virtkit/vm1/libvirt/run/libvirt-sock
	// /run/virtkit/vm1/vnc
	// default_vm1
}

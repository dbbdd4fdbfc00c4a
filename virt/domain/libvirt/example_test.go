package libvirt_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/virt/domain"
	"github.com/virtkit/virtkit/virt/domain/libvirt"
)

// Define, start, inspect and stop a domain on libvirt's in-process test
// driver. For a real hypervisor pass a libvirtd URI such as
// "qemu:///session?socket=/run/vkt/libvirt-sock".
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := libvirt.New(ctx, "test:///default")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()

	doc := &libvirtxml.Domain{
		Type:   "qemu",
		Name:   "example-vm",
		Memory: &libvirtxml.DomainMemory{Value: 128, Unit: "MiB"},
		OS:     &libvirtxml.DomainOS{Type: &libvirtxml.DomainOSType{Arch: "x86_64", Machine: "q35", Type: "hvm"}},
	}
	if err := m.Define(ctx, doc); err != nil {
		fmt.Println(err)
		return
	}
	defer m.Undefine(ctx, doc.Name)
	if err := m.Start(ctx, doc.Name, domain.StartOptions{}); err != nil {
		fmt.Println(err)
		return
	}
	state, reason, _ := m.State(ctx, doc.Name)
	fmt.Println(state, domain.ReasonString(state, reason))

	_ = m.Destroy(ctx, doc.Name)
	state, reason, _ = m.State(ctx, doc.Name)
	fmt.Println(state, domain.ReasonString(state, reason))

	err = m.Define(ctx, doc)
	fmt.Println(errors.Is(err, domain.ErrAlreadyExists))
	// Output:
	// running booted
	// shutoff destroyed
	// true
}

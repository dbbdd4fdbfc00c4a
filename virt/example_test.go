package virt_test

import (
	"context"
	"fmt"
	"time"

	"github.com/virtkit/virtkit/virt"
	"github.com/virtkit/virtkit/virt/domain"
	domainfake "github.com/virtkit/virtkit/virt/domain/fake"
	"github.com/virtkit/virtkit/virt/network"
	"github.com/virtkit/virtkit/virt/storage"
	storagefake "github.com/virtkit/virtkit/virt/storage/fake"
)

// Run one VMI with fakes for every effect: the same calls, with
// virt/domain/libvirt, storage.New and virt/network/netns.Open, run it for real.
func ExampleMachine() {
	ctx := context.Background()
	dom := domainfake.New()
	m, err := virt.New(tinyVMI(),
		virt.WithDomainManager(dom),
		virt.WithStorage(storagefake.New(), storage.Pod{}),
		virt.WithNetwork(&network.Fake{PodInterfaces: []network.PodInterface{{Name: "eth0", MAC: "0a:58:0a:f4:00:07", IPs: []string{"10.244.0.7/24"}}}}),
		virt.WithHost(domain.Host{Emulation: true}),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := m.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	status, _ := m.Status(ctx)
	fmt.Println(m.DomainName(), status.Phase)
	fmt.Println(m.NetworkPlan["default"].Binding, m.NetworkPlan["default"].TapName)
	if err := m.Stop(ctx, 30*time.Second); err != nil {
		fmt.Println(err)
	}
	infos, _ := dom.List(ctx)
	fmt.Println("domains left:", len(infos))
	// Output:
	// default_tiny Running
	// masquerade tap0
	// domains left: 0
}

package network_test

import (
	"slices"
	"strconv"
	"testing"

	"github.com/virtkit/virtkit/virt/network"
	"github.com/virtkit/virtkit/virt/network/networktest"
)

// The fake passes the contract a real namespace passes, with the interfaces
// it holds set up and its DHCP servers standing for the namespace's state.
func TestFakeContract(t *testing.T) {
	networktest.Run(t, func(t *testing.T) networktest.Target {
		f := &network.Fake{PodInterfaces: []network.PodInterface{{
			Name: "eth0", MAC: "0a:58:0a:63:00:02", IPs: []string{"10.99.0.2/24"}, MTU: 1500,
			Routes: []network.Route{{Dst: "0.0.0.0/0", Gateway: "10.99.0.1"}},
		}}}
		return networktest.Target{
			Configurator: f,
			State: func(*testing.T) []string {
				var out []string
				for name, ip := range f.Active() {
					out = append(out, "interface "+name+" tap "+ip.TapName+" dhcp "+strconv.Itoa(f.DHCPRunning(name)))
				}
				slices.Sort(out)
				return out
			},
			DHCPRunning: func(_ *testing.T, iface string) int { return f.DHCPRunning(iface) },
		}
	})
}

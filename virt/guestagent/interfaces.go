package guestagent

import (
	"context"
	"strings"
)

// Interface is one of the guest's NICs as its agent sees it.
type Interface struct {
	// Name is the guest's name for it ("eth0").
	Name string
	// MAC is its hardware address, lower case.
	MAC string
	// IPs are its addresses, without prefix length, IPv4 first as the
	// guest lists them.
	IPs []string
}

// Interfaces is the guest's NICs (guest-network-get-interfaces), but the
// loopback, at most MaxItems with at most MaxItems addresses each.
func Interfaces(ctx context.Context, c Commander, domain string) ([]Interface, error) {
	var nics []struct {
		Name      string `json:"name"`
		MAC       string `json:"hardware-address"`
		Addresses []struct {
			Type    string `json:"ip-address-type"`
			Address string `json:"ip-address"`
		} `json:"ip-addresses"`
	}
	if err := call(ctx, c, domain, "guest-network-get-interfaces", nil, &nics); err != nil {
		return nil, err
	}
	var out []Interface
	for _, n := range first(nics) {
		if n.Name == "lo" {
			continue
		}
		i := Interface{Name: text(n.Name), MAC: text(strings.ToLower(n.MAC))}
		for _, a := range first(n.Addresses) {
			i.IPs = append(i.IPs, text(a.Address))
		}
		out = append(out, i)
	}
	return out, nil
}

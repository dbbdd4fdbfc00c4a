package certs_test

import (
	"fmt"
	"time"

	"github.com/virtkit/virtkit/deploy/certs"
)

// A CA, a serving certificate it signs, and when to renew it.
func Example() {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	ca, err := certs.NewCA("kubevirt.io", now, 7*24*time.Hour)
	if err != nil {
		panic(err)
	}
	req := certs.Request{CommonName: "virt-api", DNSNames: []string{"virt-api.kubevirt.svc"}, Server: true, Validity: 24 * time.Hour}
	leaf, err := ca.Issue(req, now)
	if err != nil {
		panic(err)
	}
	fmt.Println(leaf.Cert.DNSNames, certs.Fits(leaf.Cert, ca.Cert, req))
	fmt.Println(certs.Due(leaf.Cert, now.Add(12*time.Hour), 10*time.Hour), certs.Due(leaf.Cert, now.Add(15*time.Hour), 10*time.Hour))
	// Output:
	// [virt-api.kubevirt.svc] true
	// false true
}

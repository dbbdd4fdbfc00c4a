package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/virtkit/virtkit/local/registry"
)

// push pushes a disk image file as a containerDisk image to a registry on
// loopback (virt-local's, usually): args are DISK and REFERENCE.
func push(o options, args []string) error {
	if len(args) != 2 {
		return fmt.Errorf("push DISK REFERENCE, e.g. push fedora.qcow2 localhost:%s/vms/fedora:41", port(o.registry()))
	}
	disk, ref := args[0], args[1]
	r, err := name.ParseReference(ref)
	if err != nil {
		return err
	}
	if host := r.Context().RegistryStr(); !loopback(host) {
		return fmt.Errorf("%s: %s is not a registry on loopback; virt-local's is %s (localhost:%s/NAME:TAG)",
			ref, host, o.registry(), port(o.registry()))
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	start := time.Now()
	digest, pushed, err := registry.PushContainerDisk(ctx, ref, disk)
	if err != nil {
		return err
	}
	if !pushed {
		fmt.Printf("%s is already %s@%s\n", disk, ref, digest)
		return nil
	}
	fmt.Printf("pushed %s as %s@%s (%s)\n", disk, ref, digest, time.Since(start).Round(time.Millisecond))
	return nil
}

// loopback reports whether host:port names this machine.
func loopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// port is the port of host:port.
func port(hostport string) string {
	_, p, err := net.SplitHostPort(hostport)
	if err != nil {
		return "PORT"
	}
	return p
}

// registryState says whether the registry at addr answers.
func registryState(addr string) string {
	c := http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get("http://" + addr + "/v2/")
	if err != nil {
		return "(not answering: " + err.Error() + ")"
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Sprintf("(answering %s)", resp.Status)
	}
	return fmt.Sprintf("(serving; push images as localhost:%s/NAME:TAG)", port(addr))
}

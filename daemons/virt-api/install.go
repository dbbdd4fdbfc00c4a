package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/deploy"
)

// installOptions say where the apiserver finds virt-api.
type installOptions struct {
	namespace, service string
	port               int
	externalName       string
	caBundleFile       string
}

// install creates or updates what makes the apiserver call virt-api.
func install(ctx context.Context, cl client.Client, c config, log logr.Logger) error {
	o := c.installOpts
	caFile := o.caBundleFile
	if caFile == "" {
		caFile = c.certFile
	}
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return fmt.Errorf("--ca-bundle-file: %w", err)
	}
	port := int32(o.port)
	objs, err := deploy.VirtAPIObjects(deploy.VirtAPI{Namespace: o.namespace, Service: o.service, Port: port,
		TargetPort: listenPort(c.listen, port), ExternalName: o.externalName, CABundle: ca})
	if err != nil {
		return err
	}
	for _, obj := range objs {
		kind := obj.GetObjectKind().GroupVersionKind().Kind
		if err := deploy.Apply(ctx, cl, obj); err != nil {
			return err
		}
		log.Info("installed", "kind", kind, "name", obj.GetName())
	}
	return nil
}

// listenPort is the port of a listen address, or def when it has none.
func listenPort(addr string, def int32) int32 {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return def
	}
	p, err := strconv.ParseInt(port, 10, 32)
	if err != nil || p == 0 {
		return def
	}
	return int32(p)
}

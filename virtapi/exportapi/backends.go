package exportapi

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/url"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	exportv1 "kubevirt.io/api/export/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/controllers/conditions"
	"github.com/virtkit/virtkit/virt/storage/export"
)

// Backends finds an export's server for the export proxy.
type Backends struct {
	// Reader reads exports and pods (get).
	Reader client.Reader
	// CA returns the export CA's bundle, read at each request so that a
	// renewed CA applies.
	CA func() (*x509.CertPool, error)
}

var _ export.Backends = Backends{}

// Backend implements export.Backends.
func (b Backends) Backend(ctx context.Context, namespace, name string) (export.Backend, error) {
	vme := &exportv1.VirtualMachineExport{}
	switch err := b.Reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, vme); {
	case apierrors.IsNotFound(err):
		return export.Backend{}, fmt.Errorf("VirtualMachineExport %s/%s: %w", namespace, name, export.ErrNoExport)
	case err != nil:
		return export.Backend{}, err
	}
	if vme.Status == nil || vme.Status.Phase != exportv1.Ready {
		return export.Backend{}, fmt.Errorf("VirtualMachineExport %s/%s: %w", namespace, name, export.ErrNotReady)
	}
	pod := &corev1.Pod{}
	pname := export.PodName(name)
	switch err := b.Reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: pname}, pod); {
	case apierrors.IsNotFound(err):
		return export.Backend{}, fmt.Errorf("the server pod %s/%s: %w", namespace, pname, export.ErrNotReady)
	case err != nil:
		return export.Backend{}, err
	}
	if !metav1.IsControlledBy(pod, vme) {
		return export.Backend{}, fmt.Errorf("pod %s/%s is not export %s's server: %w", namespace, pname, name, export.ErrNoExport)
	}
	if pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "" || !conditions.Pod().IsTrue(pod.Status.Conditions, corev1.PodReady) {
		return export.Backend{}, fmt.Errorf("the server pod %s/%s is not ready (%s): %w", namespace, pname, pod.Status.Phase, export.ErrNotReady)
	}
	roots, err := b.CA()
	if err != nil {
		return export.Backend{}, fmt.Errorf("the export CA: %w", err)
	}
	u := &url.URL{Scheme: "https", Host: net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(export.ServerPort))}
	return export.Backend{URL: u, TLS: &tls.Config{RootCAs: roots, ServerName: export.ServiceHost(namespace, name), MinVersion: tls.VersionTLS12}}, nil
}

package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/admission"
	"github.com/virtkit/virtkit/subresources"
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
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Namespace: o.namespace, Name: o.service, Labels: map[string]string{"app.kubernetes.io/part-of": "virtkit"}},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"kubevirt.io": "virt-api"},
			Ports:    []corev1.ServicePort{{Name: "https", Port: port, TargetPort: intstr.FromInt32(listenPort(c.listen, port))}},
		},
	}
	if o.externalName != "" {
		svc.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: o.externalName,
			Ports: []corev1.ServicePort{{Name: "https", Port: port}}}
	}
	apiService := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1",
		"kind":       "APIService",
		"metadata":   map[string]any{"name": subresources.Version + "." + subresources.Group, "labels": map[string]any{"app.kubernetes.io/part-of": "virtkit"}},
		"spec": map[string]any{
			"group": subresources.Group, "version": subresources.Version,
			"service":              map[string]any{"namespace": o.namespace, "name": o.service, "port": int64(port)},
			"caBundle":             base64.StdEncoding.EncodeToString(ca),
			"groupPriorityMinimum": int64(1000), "versionPriority": int64(15),
		},
	}}
	mutating, validating := admission.Configurations(admission.Service{Namespace: o.namespace, Name: o.service, Port: port, CABundle: ca})
	roles, binding := subresources.RBAC()
	objs := []client.Object{
		&corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: o.namespace}},
		svc, apiService, mutating, validating, binding,
	}
	for _, r := range roles {
		objs = append(objs, r)
	}
	for _, obj := range objs {
		kind := obj.GetObjectKind().GroupVersionKind().Kind // the client may clear it
		if err := createOrUpdate(ctx, cl, obj); err != nil {
			return err
		}
		log.Info("installed", "kind", kind, "name", obj.GetName())
	}
	return nil
}

// createOrUpdate creates obj, or replaces the existing one's content with it.
func createOrUpdate(ctx context.Context, cl client.Client, obj client.Object) error {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	err := cl.Create(ctx, obj)
	if err == nil || !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return fmt.Errorf("creating %s %s: %w", kind, client.ObjectKeyFromObject(obj), err)
		}
		return nil
	}
	if _, ok := obj.(*corev1.Namespace); ok {
		return nil
	}
	existing := obj.DeepCopyObject().(client.Object)
	if err := cl.Get(ctx, client.ObjectKeyFromObject(obj), existing); err != nil {
		return fmt.Errorf("reading %s %s: %w", kind, client.ObjectKeyFromObject(obj), err)
	}
	obj.SetResourceVersion(existing.GetResourceVersion())
	if svc, ok := obj.(*corev1.Service); ok {
		// A Service's cluster IP cannot change.
		old := existing.(*corev1.Service)
		svc.Spec.ClusterIP, svc.Spec.ClusterIPs = old.Spec.ClusterIP, old.Spec.ClusterIPs
	}
	if err := cl.Update(ctx, obj); err != nil {
		return fmt.Errorf("updating %s %s: %w", kind, client.ObjectKeyFromObject(obj), err)
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

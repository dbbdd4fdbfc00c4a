package exportapi_test

import (
	"context"
	"crypto/x509"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	exportv1 "kubevirt.io/api/export/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/virt/storage/export"
	"github.com/virtkit/virtkit/virtapi/exportapi"
)

func TestBackend(t *testing.T) {
	vme := func(name string, phase exportv1.VirtualMachineExportPhase) *exportv1.VirtualMachineExport {
		return &exportv1.VirtualMachineExport{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
			Status: &exportv1.VirtualMachineExportStatus{Phase: phase}}
	}
	pod := func(owner *exportv1.VirtualMachineExport, name string, ready bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: export.PodName(name)},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.7"}}
		if owner != nil {
			p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(owner, exportv1.SchemeGroupVersion.WithKind("VirtualMachineExport"))}
		}
		if ready {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}
		return p
	}
	good, pending, stranger, starting := vme("good", exportv1.Ready), vme("pending", exportv1.Pending), vme("stranger", exportv1.Ready), vme("starting", exportv1.Ready)
	objs := []client.Object{good, pending, stranger, starting, pod(good, "good", true), pod(nil, "stranger", true), pod(starting, "starting", false)}
	cl := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).Build()
	b := exportapi.Backends{Reader: cl, CA: func() (*x509.CertPool, error) { return x509.NewCertPool(), nil }}
	ctx := context.Background()
	for name, want := range map[string]error{"absent": export.ErrNoExport, "pending": export.ErrNotReady,
		"stranger": export.ErrNoExport, "starting": export.ErrNotReady} {
		if _, err := b.Backend(ctx, "ns", name); !errors.Is(err, want) {
			t.Errorf("export %s: %v, want %v", name, err, want)
		}
	}
	be, err := b.Backend(ctx, "ns", "good")
	if err != nil {
		t.Fatal(err)
	}
	if be.URL.String() != "https://10.0.0.7:8443" || be.TLS.ServerName != "virt-export-good.ns.svc" || be.TLS.RootCAs == nil {
		t.Errorf("backend: %s, server name %q", be.URL, be.TLS.ServerName)
	}
}

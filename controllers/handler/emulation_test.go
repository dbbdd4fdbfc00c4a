package handler_test

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/domain"
)

// On a node that may use KVM, each guest's domain type follows the
// KubeVirt CR's useEmulation as it is when the guest starts: the handler
// reads it live, with no restart. A node that must not use KVM emulates
// whatever the CR says.
func TestUseEmulationIsReadLive(t *testing.T) {
	ctx := context.Background()
	kv := &virtv1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "kubevirt"},
		Spec: virtv1.KubeVirtSpec{Configuration: virtv1.KubeVirtConfiguration{
			DeveloperConfiguration: &virtv1.DeveloperConfiguration{UseEmulation: true}}}}
	n := newFakeNode(t, kv)
	n.kvm = true
	n.r = n.handler()
	domainType := func(name string) string {
		t.Helper()
		n.running(name)
		d, err := n.dom.XML(ctx, "default_"+name, domain.XMLOptions{})
		assert.NilError(t, err)
		return d.Type
	}
	assert.Equal(t, domainType("vm1"), "qemu")

	kv.Spec.Configuration.DeveloperConfiguration.UseEmulation = false
	assert.NilError(t, n.c.Update(ctx, kv))
	assert.Equal(t, domainType("vm2"), "kvm")

	n.kvm = false
	n.r = n.handler()
	assert.Equal(t, domainType("vm3"), "qemu")
}

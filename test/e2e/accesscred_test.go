package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/controllers/conditions"
)

// Access credentials through the guest agent, as KubeVirt sets them: an
// SSH public key from a Secret becomes root's authorized key in the guest
// and root's password from another is set (the guest prints both), and the
// VMI says AccessCredentialsSynchronized.
func TestAccessCredentials(t *testing.T) {
	w := up(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ns := "default"
	const key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFtdJ0b3J3zGmK2tqRkKZ5eI6yhJQdPq3v4l4B2fHn9y virtkit-e2e@test"
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds-keys"}, StringData: map[string]string{"key1": key + "\n"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds-password"}, StringData: map[string]string{"root": "virtkit-e2e"}},
	} {
		must(t, w.c.Create(ctx, s))
		t.Cleanup(func() { _ = w.c.Delete(context.Background(), s) })
	}
	vm := w.readVM(t, "../../examples/manifests/vm-tiny.yaml")
	vm.Name = "creds"
	vm.Spec.Template.Spec.AccessCredentials = []virtv1.AccessCredential{
		{SSHPublicKey: &virtv1.SSHPublicKeyAccessCredential{
			Source: virtv1.SSHPublicKeyAccessCredentialSource{Secret: &virtv1.AccessCredentialSecretSource{SecretName: "creds-keys"}},
			PropagationMethod: virtv1.SSHPublicKeyAccessCredentialPropagationMethod{
				QemuGuestAgent: &virtv1.QemuGuestAgentSSHPublicKeyAccessCredentialPropagation{Users: []string{"root"}}}}},
		{UserPassword: &virtv1.UserPasswordAccessCredential{
			Source:            virtv1.UserPasswordAccessCredentialSource{Secret: &virtv1.AccessCredentialSecretSource{SecretName: "creds-password"}},
			PropagationMethod: virtv1.UserPasswordAccessCredentialPropagationMethod{QemuGuestAgent: &virtv1.QemuGuestAgentUserPasswordAccessCredentialPropagation{}}}},
	}
	must(t, w.c.Create(ctx, vm))
	vmi := w.waitRunning(ctx, t, vm)
	said := ""
	w.waitVMI(ctx, t, vm, "AccessCredentialsSynchronized", func(v *virtv1.VirtualMachineInstance) bool {
		c := conditions.VMI().Find(v.Status.Conditions, virtv1.VirtualMachineInstanceAccessCredentialsSynchronized)
		if c != nil && c.Status == corev1.ConditionFalse && c.Message != said {
			said = c.Message
			t.Logf("not synchronized yet: %s", said)
		}
		return c != nil && c.Status == corev1.ConditionTrue
	})
	serial := w.serialLog(ctx, t, vmi)
	waitFile(ctx, t, serial, "VIRTKIT-SSH-KEY virtkit-e2e@test")
	waitFile(ctx, t, serial, "VIRTKIT-PASSWORD-CHANGED root")
	w.deleteVM(ctx, t, vm)
}

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
// VMI says AccessCredentialsSynchronized. virtctl ssh then logs in with
// that key and virtctl scp copies a file in and out, both through
// port-forward to the guest's SSH server. Another VM gets its key through
// its cloud-init disk (noCloud propagation), and ssh logs in with it.
func TestAccessCredentials(t *testing.T) {
	w := up(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ns := "default"
	keyFile, key := sshKey(ctx, t, "virtkit-e2e@test")
	ciKeyFile, ciKey := sshKey(ctx, t, "virtkit-e2e@cloud-init")
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds-keys"}, StringData: map[string]string{"key1": key + "\n"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds-password"}, StringData: map[string]string{"root": "virtkit-e2e"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds-cloud-init"}, StringData: map[string]string{"key": ciKey}},
	} {
		must(t, w.c.Create(ctx, s))
		t.Cleanup(func() { _ = w.c.Delete(context.Background(), s) })
	}
	withSSH := func(name string, creds ...virtv1.AccessCredential) *virtv1.VirtualMachine {
		vm := w.readVM(t, "../../examples/manifests/vm-tiny.yaml")
		vm.Name = name
		// Masquerade forwards only the ports an interface lists.
		ifc := &vm.Spec.Template.Spec.Domain.Devices.Interfaces[0]
		ifc.Ports = append(ifc.Ports, virtv1.Port{Name: "ssh", Port: 22})
		vm.Spec.Template.Spec.AccessCredentials = creds
		return vm
	}
	// The other VM has its key through its cloud-init disk (noCloud).
	ci := withSSH("creds-ci", virtv1.AccessCredential{SSHPublicKey: &virtv1.SSHPublicKeyAccessCredential{
		Source:            virtv1.SSHPublicKeyAccessCredentialSource{Secret: &virtv1.AccessCredentialSecretSource{SecretName: "creds-cloud-init"}},
		PropagationMethod: virtv1.SSHPublicKeyAccessCredentialPropagationMethod{NoCloud: &virtv1.NoCloudSSHPublicKeyAccessCredentialPropagation{}}}})
	must(t, w.c.Create(ctx, ci))
	vm := withSSH("creds")
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
	waitFile(ctx, t, serial, "VIRTKIT-SSH port=22")

	// virtctl ssh and scp log in with that key, through port-forward.
	quiet := []string{"-i", keyFile, "-t", "-o StrictHostKeyChecking=no", "-t", "-o UserKnownHostsFile=/dev/null", "-t", "-o LogLevel=ERROR"}
	out := w.virtctlOut(ctx, t, append([]string{"ssh", "root@vm/creds/default", "--command=echo VIRTKIT-SSH-OK $(hostname)"}, quiet...)...)
	if got := strings.TrimSpace(string(out)); got != "VIRTKIT-SSH-OK creds" {
		t.Errorf("virtctl ssh --command: %q, want the guest's host name", got)
	}
	local := filepath.Join(t.TempDir(), "note")
	must(t, os.WriteFile(local, []byte("copied by virtctl scp\n"), 0o600))
	w.virtctlOut(ctx, t, append([]string{"scp", local, "root@vm/creds/default:/tmp/note"}, quiet...)...)
	back := filepath.Join(t.TempDir(), "back")
	w.virtctlOut(ctx, t, append([]string{"scp", "root@vm/creds/default:/tmp/note", back}, quiet...)...)
	if b, err := os.ReadFile(back); err != nil || string(b) != "copied by virtctl scp\n" {
		t.Errorf("a file copied in and out with virtctl scp: %q, %v", b, err)
	}

	ciVMI := w.waitRunning(ctx, t, ci)
	waitFile(ctx, t, w.serialLog(ctx, t, ciVMI), "VIRTKIT-SSH port=22")
	out = w.virtctlOut(ctx, t, append([]string{"ssh", "root@vm/creds-ci/default", "--command=hostname", "-i", ciKeyFile}, quiet[2:]...)...)
	if got := strings.TrimSpace(string(out)); got != "creds-ci" {
		t.Errorf("virtctl ssh with the key cloud-init installed: %q", got)
	}
	must(t, w.c.Delete(ctx, ci))
	w.deleteVM(ctx, t, vm)
}

// sshKey makes an ed25519 key pair with comment; it returns the private
// key's file and the public key's line.
func sshKey(ctx context.Context, t *testing.T, comment string) (string, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "id_ed25519")
	if out, err := exec.CommandContext(ctx, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", file).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	pub, err := os.ReadFile(file + ".pub")
	must(t, err)
	return file, strings.TrimSpace(string(pub))
}

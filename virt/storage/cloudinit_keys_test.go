package storage_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/storage"
)

// The SSH keys of access credentials propagated through cloud-init are in
// the meta-data of that kind of disk only, as KubeVirt writes them; a
// Secret the pod lacks is named.
func TestCloudInitFilesKeys(t *testing.T) {
	cred := func(secret string, m virtv1.SSHPublicKeyAccessCredentialPropagationMethod) virtv1.AccessCredential {
		return virtv1.AccessCredential{SSHPublicKey: &virtv1.SSHPublicKeyAccessCredential{
			Source: virtv1.SSHPublicKeyAccessCredentialSource{Secret: &virtv1.AccessCredentialSecretSource{SecretName: secret}}, PropagationMethod: m}}
	}
	vmi := &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "vm", Namespace: "ns", UID: "u1"}}
	vmi.Spec.AccessCredentials = []virtv1.AccessCredential{
		cred("nc", virtv1.SSHPublicKeyAccessCredentialPropagationMethod{NoCloud: &virtv1.NoCloudSSHPublicKeyAccessCredentialPropagation{}}),
		cred("cd", virtv1.SSHPublicKeyAccessCredentialPropagationMethod{ConfigDrive: &virtv1.ConfigDriveSSHPublicKeyAccessCredentialPropagation{}}),
	}
	secrets := map[string]map[string][]byte{
		"nc": {"k": []byte("ssh-ed25519 AAA1 a: b # c\nssh-rsa AAA2\n")},
		"cd": {"k": []byte("ssh-ed25519 CCC3 cd")},
	}
	noCloud := &virtv1.Volume{Name: "ci", VolumeSource: virtv1.VolumeSource{CloudInitNoCloud: &virtv1.CloudInitNoCloudSource{UserData: "#!/bin/sh\n"}}}
	files, err := storage.CloudInitFiles(vmi, noCloud, secrets)
	if err != nil {
		t.Fatal(err)
	}
	want := "instance-id: vm.ns\nlocal-hostname: vm\npublic-keys:\n  \"0\": \"ssh-ed25519 AAA1 a: b # c\"\n  \"1\": \"ssh-rsa AAA2\"\n"
	if diff := cmp.Diff(want, string(files["meta-data"])); diff != "" {
		t.Errorf("NoCloud meta-data (-want +got):\n%s", diff)
	}
	drive := &virtv1.Volume{Name: "cd", VolumeSource: virtv1.VolumeSource{CloudInitConfigDrive: &virtv1.CloudInitConfigDriveSource{UserData: "#!/bin/sh\n"}}}
	files, err = storage.CloudInitFiles(vmi, drive, secrets)
	if err != nil {
		t.Fatal(err)
	}
	want = `{"instance_id":"vm.ns","local_hostname":"vm","hostname":"vm","uuid":"u1","public_keys":{"0":"ssh-ed25519 CCC3 cd"}}`
	if diff := cmp.Diff(want, string(files["openstack/latest/meta_data.json"])); diff != "" {
		t.Errorf("ConfigDrive meta_data.json (-want +got):\n%s", diff)
	}
	delete(secrets, "nc")
	if _, err := storage.CloudInitFiles(vmi, noCloud, secrets); err == nil || !strings.Contains(err.Error(), "spec.accessCredentials[0]: Secret nc is not available in the pod") {
		t.Errorf("a Secret the pod lacks: %v", err)
	}
}

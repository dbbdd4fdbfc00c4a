package handler

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/confined"
	"github.com/virtkit/virtkit/virt/storage"
)

// TestCloudInitSecretsFromThePod: the handler, which holds no access to
// Secrets, reads the secrets cloud-init volumes name where the launcher pod
// mounts them (a kubelet's secret volume: keys linked through ..data), and
// only inside the pod: a key linked to a node file reads nothing of it.
func TestCloudInitSecretsFromThePod(t *testing.T) {
	base := t.TempDir()
	podRoot, node := filepath.Join(base, "pod"), filepath.Join(base, "node")
	layout := storage.Layout{PrivateDir: "/p"}
	secretVolume := func(dir string, keys map[string]string) {
		t.Helper()
		ts := filepath.Join(podRoot, dir, "..2026_12_03_01_00_00.1")
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		must(os.MkdirAll(ts, 0o755))
		must(os.Symlink(filepath.Base(ts), filepath.Join(podRoot, dir, "..data")))
		for k, v := range keys {
			must(os.WriteFile(filepath.Join(ts, k), []byte(v), 0o644))
			must(os.Symlink(filepath.Join("..data", k), filepath.Join(podRoot, dir, k)))
		}
	}
	secretVolume(layout.CloudInitSecretDir("ci", false), map[string]string{"userdata": "#cloud-config\n"})
	secretVolume(layout.CloudInitSecretDir("ci", true), map[string]string{"networkData": "version: 2\n"})
	// A pod user's trick: the key is a link to a node file.
	if err := os.MkdirAll(node, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(node, "shadow"), []byte("root:secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	evil := filepath.Join(podRoot, layout.CloudInitSecretDir("evil", false))
	if err := os.MkdirAll(evil, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(node, "shadow"), filepath.Join(evil, "userdata")); err != nil {
		t.Fatal(err)
	}

	files, err := confined.Open(podRoot, confined.InRoot)
	if err != nil {
		t.Fatal(err)
	}
	defer files.Close()
	r := &Reconciler{cfg: Config{StorageLayout: layout}}
	ci := func(name, user, network string) virtv1.Volume {
		src := &virtv1.CloudInitNoCloudSource{UserDataSecretRef: &corev1.LocalObjectReference{Name: user}}
		if network != "" {
			src.NetworkDataSecretRef = &corev1.LocalObjectReference{Name: network}
		}
		return virtv1.Volume{Name: name, VolumeSource: virtv1.VolumeSource{CloudInitNoCloud: src}}
	}
	vmi := &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm"},
		Spec: virtv1.VirtualMachineInstanceSpec{Volumes: []virtv1.Volume{ci("ci", "user-s", "net-s"), ci("absent", "missing-s", "")}}}
	pod, _, err := r.podFacts(context.Background(), vmi, files)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string][]byte{"user-s": {"userdata": []byte("#cloud-config\n")}, "net-s": {"networkData": []byte("version: 2\n")}}
	if d := cmp.Diff(want, pod.Secrets); d != "" {
		t.Errorf("secrets read from the pod (-want +got):\n%s", d)
	}

	vmi.Spec.Volumes = []virtv1.Volume{ci("evil", "user-s", "")}
	pod, _, err = r.podFacts(context.Background(), vmi, files)
	if err == nil && len(pod.Secrets["user-s"]["userdata"]) > 0 {
		t.Fatalf("read %q through a link to a node file", pod.Secrets["user-s"]["userdata"])
	}
}

package provisioner_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/local/controlplane"
	"github.com/virtkit/virtkit/local/provisioner"
)

// TestBindsClaimsOnARealControlPlane runs the provisioner next to a real
// kube-controller-manager, whose volume binder asks for volumes and binds
// them: a claim gets a folder and is Bound, a Block claim gets a
// ProvisioningFailed event naming the field, and deleting the bound claim
// deletes its volume and folder.
func TestBindsClaimsOnARealControlPlane(t *testing.T) {
	testenv.Integration(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	base := testenv.FreePorts(t, 2)
	cp, err := controlplane.Start(ctx, controlplane.Config{DataDir: filepath.Join(testenv.Dir(t), "data"),
		BinDir: testenv.Output(t, "bin"), APIServerPort: base, EtcdPort: base + 1, Logger: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Error(err)
		}
	})
	rc, err := cp.RESTConfig()
	must(t, err)
	cs, err := kubernetes.NewForConfig(rc)
	must(t, err)
	_, err = cs.StorageV1().StorageClasses().Create(ctx, provisioner.StorageClass("local", true), metav1.CreateOptions{})
	must(t, err)

	root := filepath.Join(testenv.Dir(t), "volumes")
	pctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- provisioner.Run(pctx, cs, root, provisioner.WithLogger(testr.New(t)), provisioner.WithResync(5*time.Second))
	}()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	// A claim without a class: the default class is the provisioner's.
	pvc, err := cs.CoreV1().PersistentVolumeClaims("default").Create(ctx, claim(nil), metav1.CreateOptions{})
	must(t, err)
	var dir string
	testenv.Eventually(ctx, t, "the claim Bound to a folder", func() (bool, string) {
		c, err := cs.CoreV1().PersistentVolumeClaims("default").Get(ctx, pvc.Name, metav1.GetOptions{})
		if err != nil || c.Status.Phase != corev1.ClaimBound {
			return false, fmt.Sprintf("%v %v", c.Status.Phase, err)
		}
		pv, err := cs.CoreV1().PersistentVolumes().Get(ctx, c.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		dir = pv.Spec.HostPath.Path
		return true, ""
	})
	if filepath.Dir(dir) != root {
		t.Fatalf("the volume's folder %s is not in %s", dir, root)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}

	block := corev1.PersistentVolumeBlock
	bad := claim(func(c *corev1.PersistentVolumeClaim) { c.Name = "raw"; c.Spec.VolumeMode = &block })
	_, err = cs.CoreV1().PersistentVolumeClaims("default").Create(ctx, bad, metav1.CreateOptions{})
	must(t, err)
	testenv.Eventually(ctx, t, "a ProvisioningFailed event naming spec.volumeMode", func() (bool, string) {
		evs, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=raw"})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range evs.Items {
			if e.Reason == "ProvisioningFailed" && strings.Contains(e.Message, "spec.volumeMode: Block is not supported") {
				return true, ""
			}
			seen = append(seen, e.Reason+": "+e.Message)
		}
		return false, strings.Join(seen, "; ")
	})

	must(t, cs.CoreV1().PersistentVolumeClaims("default").Delete(ctx, pvc.Name, metav1.DeleteOptions{}))
	testenv.Eventually(ctx, t, "the volume and its folder gone", func() (bool, string) {
		pvs, err := cs.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		_, ferr := os.Stat(dir)
		return len(pvs.Items) == 0 && os.IsNotExist(ferr), fmt.Sprintf("%d volumes, folder: %v", len(pvs.Items), ferr)
	})
	if ents, err := os.ReadDir(root); err != nil || len(ents) != 0 {
		t.Errorf("root after the deletes: %d entries, %v", len(ents), err)
	}
	_, err = cs.CoreV1().PersistentVolumeClaims("default").Get(ctx, "raw", metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Error(err)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

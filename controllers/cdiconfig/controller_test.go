package cdiconfig

import (
	"fmt"
	"strings"
	"testing"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/internal/testenv/kubeenv"
)

// TestController: on a real apiserver with virtkit's CRDs the controller
// makes the CDIConfig "config" (honouring WaitForFirstConsumer), says where the upload proxy is and CDI's
// default overhead, and follows a spec change; the CRD refuses an overhead
// CDI's pattern does not allow, naming the field; the scratch space class
// is the spec's once a StorageClass of that name exists.
func TestController(t *testing.T) {
	env := kubeenv.ControlPlane(t)
	mgr := kubeenv.NewManager(t, env)
	if err := New(WithDefaults(Defaults{UploadProxyURL: "https://127.0.0.1:8443"}), WithEventRecorder(record.NewFakeRecorder(10))).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	kubeenv.RunManager(t, mgr)
	ctx := testenv.Within(t, time.Minute)
	cfg := &cdiv1.CDIConfig{}
	wait := func(what string, ok func() bool) {
		t.Helper()
		testenv.Eventually(ctx, t, what, func() (bool, string) {
			if err := env.Client.Get(ctx, client.ObjectKey{Name: Name}, cfg); err != nil {
				return false, err.Error()
			}
			return ok(), fmt.Sprintf("%+v", cfg.Status)
		})
	}
	wait("the CDIConfig made, its status written", func() bool {
		return cfg.Status.UploadProxyURL != nil && *cfg.Status.UploadProxyURL == "https://127.0.0.1:8443" &&
			cfg.Status.FilesystemOverhead != nil && cfg.Status.FilesystemOverhead.Global == "0.06"
	})
	if !HonorsWaitForFirstConsumer(cfg) {
		t.Errorf("the CDIConfig made has feature gates %q, want %s as CDI's released CR", cfg.Spec.FeatureGates, HonorWaitForFirstConsumer)
	}
	override := "https://upload.example.com"
	cfg.Spec.UploadProxyURLOverride = &override
	cfg.Spec.FilesystemOverhead = &cdiv1.FilesystemOverhead{Global: "0.1", StorageClass: map[string]cdiv1.Percent{"fast": "0.2"}}
	if err := env.Client.Update(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	wait("the spec followed", func() bool {
		return *cfg.Status.UploadProxyURL == override && Overhead(cfg, "fast") == 0.2 && Overhead(cfg, "other") == 0.1
	})
	// The scratch space class is the spec's once that class exists.
	cfg.Spec.ScratchSpaceStorageClass = ptrTo("scratchy")
	if err := env.Client.Update(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	wait("no scratch class while it does not exist", func() bool {
		return cfg.Spec.ScratchSpaceStorageClass != nil && cfg.Status.ScratchSpaceStorageClass == ""
	})
	if err := env.Client.Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "scratchy"}, Provisioner: "example.com/scratch"}); err != nil {
		t.Fatal(err)
	}
	wait("the scratch class once it exists", func() bool { return cfg.Status.ScratchSpaceStorageClass == "scratchy" })
	bad := cfg.DeepCopy()
	bad.Spec.FilesystemOverhead.Global = "6%"
	if err := env.Client.Update(ctx, bad); err == nil || !strings.Contains(err.Error(), "spec.filesystemOverhead.global") {
		t.Fatalf("an overhead of 6%%: %v, want the CRD to refuse it by its field", err)
	}
}

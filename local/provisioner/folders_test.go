package provisioner_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"

	"github.com/virtkit/virtkit/local/provisioner"
)

func claim(mut func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")}},
		},
	}
	if mut != nil {
		mut(c)
	}
	return c
}

func TestProvisionMakesAFolderAndAVolume(t *testing.T) {
	root := t.TempDir()
	f := &provisioner.Folders{Root: root, Log: logr.Discard()}
	retain := corev1.PersistentVolumeReclaimRetain
	sc := provisioner.StorageClass("local", true)
	sc.ReclaimPolicy = &retain
	pv, state, err := f.Provision(context.Background(), controller.ProvisionOptions{StorageClass: sc, PVName: "pvc-1", PVC: claim(nil)})
	if err != nil || state != controller.ProvisioningFinished {
		t.Fatalf("Provision = %v, %v", state, err)
	}
	dir := filepath.Join(root, "pvc-1")
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() || st.Mode().Perm() != 0o777 {
		t.Fatalf("folder %s: %v, %v", dir, st, err)
	}
	fs, typ := corev1.PersistentVolumeFilesystem, corev1.HostPathDirectory
	want := corev1.PersistentVolumeSpec{
		Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")},
		AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
		PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
		VolumeMode:                    &fs,
		PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: &typ}},
	}
	if d := cmp.Diff(want, pv.Spec); d != "" {
		t.Errorf("volume spec (-want +got):\n%s", d)
	}
	if pv.Name != "pvc-1" || pv.Annotations[provisioner.FolderAnnotation] != dir {
		t.Errorf("volume meta = %+v", pv.ObjectMeta)
	}

	if err := f.Delete(context.Background(), pv); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("folder after Delete: %v", err)
	}
}

func TestProvisionRefusals(t *testing.T) {
	block := corev1.PersistentVolumeBlock
	for _, tc := range []struct {
		name  string
		pvc   *corev1.PersistentVolumeClaim
		class func(*storagev1.StorageClass)
		want  string
	}{
		{"block", claim(func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeMode = &block }), nil, "claim default/data: spec.volumeMode: Block is not supported"},
		{"selector", claim(func(c *corev1.PersistentVolumeClaim) { c.Spec.Selector = &metav1.LabelSelector{} }), nil, "spec.selector: a label selector is not supported"},
		{"clone", claim(func(c *corev1.PersistentVolumeClaim) {
			c.Spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "other"}
		}), nil, "spec.dataSource: cloning and snapshots are not supported"},
		{"no size", claim(func(c *corev1.PersistentVolumeClaim) { c.Spec.Resources.Requests = nil }), nil, "spec.resources.requests.storage: a positive size is required"},
		{"access mode", claim(func(c *corev1.PersistentVolumeClaim) {
			c.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{"Sometimes"}
		}), nil, `spec.accessModes: unknown access mode "Sometimes"`},
		{"parameters", claim(nil), func(sc *storagev1.StorageClass) { sc.Parameters = map[string]string{"speed": "fast"} }, "storageClass local: parameters.speed: not supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			f := &provisioner.Folders{Root: root, Log: logr.Discard()}
			sc := provisioner.StorageClass("local", false)
			if tc.class != nil {
				tc.class(sc)
			}
			pv, state, err := f.Provision(context.Background(), controller.ProvisionOptions{StorageClass: sc, PVName: "pvc-1", PVC: tc.pvc})
			if err == nil || !strings.Contains(err.Error(), tc.want) || pv != nil || state != controller.ProvisioningFinished {
				t.Errorf("Provision = %v, %v, %v; want a final error with %q", pv, state, err, tc.want)
			}
			if ents, _ := os.ReadDir(root); len(ents) != 0 {
				t.Errorf("a refused claim left %d entries in the root", len(ents))
			}
		})
	}
}

func TestDeleteIgnoresVolumesItDidNotMake(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	f := &provisioner.Folders{Root: root, Log: logr.Discard()}
	for name, pv := range map[string]*corev1.PersistentVolume{
		"no annotation": {ObjectMeta: metav1.ObjectMeta{Name: "pv"}, Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: outside}}}},
		"folder outside the root": {ObjectMeta: metav1.ObjectMeta{Name: "pv", Annotations: map[string]string{provisioner.FolderAnnotation: outside}},
			Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: outside}}}},
		"name leaving the root": {ObjectMeta: metav1.ObjectMeta{Name: "..", Annotations: map[string]string{provisioner.FolderAnnotation: filepath.Dir(root)}},
			Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: filepath.Dir(root)}}}},
	} {
		err := f.Delete(context.Background(), pv)
		var ignored *controller.IgnoredError
		if !errors.As(err, &ignored) {
			t.Errorf("%s: Delete = %v, want an IgnoredError", name, err)
		}
	}
	if _, err := os.Stat(outside); err != nil {
		t.Errorf("a folder outside the root was touched: %v", err)
	}
}

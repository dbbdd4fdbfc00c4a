package export_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"

	"github.com/virtkit/virtkit/virt/storage/export"
	exporttoken "github.com/virtkit/virtkit/virt/storage/export/token"
)

// A VM's manifests: its dataVolumeTemplate of an exported claim imports
// from the export's gzip link, another exported claim of its volumes gets
// a DataVolume of its size (its backend storage none), both naming the CA ConfigMap and the auth-header Secret;
// the server serves them as a JSON List and as YAML, and answers 404 for
// an audience it has none for.
func TestVMManifests(t *testing.T) {
	vm := &virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "vm", Namespace: "ns", UID: "u", ResourceVersion: "7"},
		Spec: virtv1.VirtualMachineSpec{DataVolumeTemplates: []virtv1.DataVolumeTemplateSpec{{ObjectMeta: metav1.ObjectMeta{Name: "root"},
			Spec: cdiv1.DataVolumeSpec{SourceRef: &cdiv1.DataVolumeSourceRef{Kind: "DataSource", Name: "fedora"}}}},
			Template: &virtv1.VirtualMachineInstanceTemplateSpec{Spec: virtv1.VirtualMachineInstanceSpec{Volumes: []virtv1.Volume{
				{Name: "root", VolumeSource: virtv1.VolumeSource{DataVolume: &virtv1.DataVolumeSource{Name: "root"}}},
				{Name: "data", VolumeSource: virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
					PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}}}},
		Status: virtv1.VirtualMachineStatus{Ready: true}}
	// The VM's backend storage is exported, as an archive, but no volume
	// names its claim: it gets no DataVolume.
	vols := []export.Volume{{Claim: "root", Path: "/export-volumes/root", Content: export.DiskImage},
		{Claim: "data", Path: "/export-volumes/data", Content: export.DiskImage},
		{Claim: "persistent-state-for-vm-x7k2p", Path: "/export-volumes/persistent-state-for-vm-x7k2p", Content: export.Archive}}
	base := "https://proxy/api/export.kubevirt.io/v1beta1/namespaces/ns/virtualmachineexports/e"
	objs := export.VMManifests("e", vm, vols, map[string]resource.Quantity{"data": resource.MustParse("2Gi")}, base, "CA")
	if len(objs) != 3 {
		t.Fatalf("%d objects, want the CA ConfigMap, the VM and one DataVolume", len(objs))
	}
	got := objs[1].(*virtv1.VirtualMachine)
	tmpl := got.Spec.DataVolumeTemplates[0].Spec
	if got.UID != "" || got.ResourceVersion != "" || got.Status.Ready || tmpl.SourceRef != nil || tmpl.Source == nil || tmpl.Source.HTTP == nil ||
		tmpl.Source.HTTP.URL != base+"/volumes/root/disk.img.gz" || tmpl.Source.HTTP.CertConfigMap != "export-ca-cm-e" ||
		len(tmpl.Source.HTTP.SecretExtraHeaders) != 1 || tmpl.Source.HTTP.SecretExtraHeaders[0] != "header-secret-e" {
		t.Errorf("the VM: %+v %+v", got.ObjectMeta, tmpl)
	}
	if vm.Spec.DataVolumeTemplates[0].Spec.SourceRef == nil {
		t.Error("VMManifests changed the VM it was given")
	}
	dv := objs[2].(*cdiv1.DataVolume)
	if dv.Name != "data" || dv.Spec.Source.HTTP.URL != base+"/volumes/data/disk.img.gz" ||
		dv.Spec.Storage.Resources.Requests.Storage().String() != "2Gi" {
		t.Errorf("the DataVolume: %+v", dv)
	}
	if cm := objs[0].(*corev1.ConfigMap); cm.Name != "export-ca-cm-e" || cm.Data["ca.pem"] != "CA" {
		t.Errorf("the CA ConfigMap: %+v", cm)
	}

	dir := t.TempDir()
	b, err := export.EncodeManifests(objs)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, export.ManifestFile(export.Internal)), b, 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "token"), []byte(token), 0o600))
	srv, err := export.NewServer(export.Config{Export: "e", CertFile: "c", KeyFile: "k", TokenFile: filepath.Join(dir, "token"), ManifestDir: dir})
	must(t, err)
	defer srv.Close()
	get := func(path, accept string) *recorder {
		rec := newRecorder()
		req, _ := http.NewRequest(http.MethodGet, path, nil)
		req.Header.Set(exporttoken.Header, token)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		srv.ServeHTTP(rec, req)
		return rec
	}
	rec := get("/internal/manifests/all", "")
	var list struct {
		Kind  string            `json:"kind"`
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(rec.body.Bytes(), &list); rec.code != http.StatusOK || err != nil || list.Kind != "List" || len(list.Items) != 3 {
		t.Errorf("JSON manifests: %d, %v, %d items", rec.code, err, len(list.Items))
	}
	rec = get("/internal/manifests/all", "application/yaml")
	if y := rec.body.String(); rec.code != http.StatusOK || strings.Count(y, "---\n") != 3 || !strings.Contains(y, "kind: VirtualMachine") {
		t.Errorf("YAML manifests: %d\n%s", rec.code, y)
	}
	if rec := get("/external/manifests/all", ""); rec.code != http.StatusNotFound {
		t.Errorf("external manifests with none written: %d, want 404", rec.code)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

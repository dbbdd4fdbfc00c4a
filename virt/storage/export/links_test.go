package export_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	exportv1 "kubevirt.io/api/export/v1beta1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"

	"github.com/virtkit/virtkit/virt/storage/export"
)

func TestLinks(t *testing.T) {
	vols := []export.Volume{
		{Claim: "disk", Path: "/export-volumes/disk", Content: export.DiskImage},
		{Claim: "blk", Path: "/dev/export-volumes/blk", Block: true},
		{Claim: "files", Path: "/export-volumes/files", Content: export.Archive},
	}
	base := export.InternalBase("ns", "my.export")
	got := export.Links(base, "CERT\n", export.Internal, vols, true)
	b := "https://virt-export-my-export.ns.svc"
	want := &exportv1.VirtualMachineExportLink{
		Cert: "CERT",
		Volumes: []exportv1.VirtualMachineExportVolume{
			{Name: "disk", Formats: []exportv1.VirtualMachineExportVolumeFormat{
				{Format: exportv1.KubeVirtRaw, Url: b + "/volumes/disk/disk.img"}, {Format: exportv1.KubeVirtGz, Url: b + "/volumes/disk/disk.img.gz"}}},
			{Name: "blk", Formats: []exportv1.VirtualMachineExportVolumeFormat{
				{Format: exportv1.KubeVirtRaw, Url: b + "/volumes/blk/disk.img"}, {Format: exportv1.KubeVirtGz, Url: b + "/volumes/blk/disk.img.gz"}}},
			{Name: "files", Formats: []exportv1.VirtualMachineExportVolumeFormat{
				{Format: exportv1.Dir, Url: b + "/volumes/files/dir"}, {Format: exportv1.ArchiveGz, Url: b + "/volumes/files/disk.tar.gz"}}},
		},
		Manifests: []exportv1.VirtualMachineExportManifest{
			{Type: exportv1.AllManifests, Url: b + "/internal/manifests/all"},
			{Type: exportv1.AuthHeader, Url: b + "/internal/manifests/secret"},
		},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("internal links (-want +got):\n%s", d)
	}
	ext := export.Links(export.ExternalBase("proxy.example:8443", "ns", "e"), "", export.External, nil, false)
	wantExt := &exportv1.VirtualMachineExportLink{Manifests: []exportv1.VirtualMachineExportManifest{
		{Type: exportv1.AuthHeader, Url: "https://proxy.example:8443/api/export.kubevirt.io/v1beta1/namespaces/ns/virtualmachineexports/e/external/manifests/secret"}}}
	if d := cmp.Diff(wantExt, ext); d != "" {
		t.Errorf("external links of a claim export (-want +got):\n%s", d)
	}
}

func TestNames(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{export.PodName("e"), "virt-export-e"},
		{export.ServiceName("a.b"), "virt-export-a-b"},
		{export.TokenSecretName("e"), "export-token-e"},
		{export.HeaderSecretName("e"), "header-secret-e"},
		{export.ClaimName("e", "disk"), "e-disk"},
		// Too long for a label value: KubeVirt's hash of the joined name.
		{export.PodName(strings.Repeat("x", 60)), "virt-export-83b71a1e"}, // FNV-1a 32 of virt-export-xxx…, checked apart
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestClaimVolume(t *testing.T) {
	block := corev1.PersistentVolumeBlock
	claim := func(ann map[string]string, mode *corev1.PersistentVolumeMode) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Annotations: ann}, Spec: corev1.PersistentVolumeClaimSpec{VolumeMode: mode}}
	}
	dv := func(ct cdiv1.DataVolumeContentType) *cdiv1.DataVolume {
		return &cdiv1.DataVolume{Spec: cdiv1.DataVolumeSpec{ContentType: ct}}
	}
	disk := export.Volume{Claim: "c", Path: "/export-volumes/c", Content: export.DiskImage}
	archive := export.Volume{Claim: "c", Path: "/export-volumes/c", Content: export.Archive}
	for _, tc := range []struct {
		name string
		pvc  *corev1.PersistentVolumeClaim
		dv   *cdiv1.DataVolume
		want export.Volume
	}{
		{"block", claim(nil, &block), nil, export.Volume{Claim: "c", Path: "/dev/export-volumes/c", Block: true, Content: export.DiskImage}},
		{"annotated kubevirt", claim(map[string]string{"cdi.kubevirt.io/storage.contentType": "kubevirt"}, nil), nil, disk},
		{"annotated empty", claim(map[string]string{"cdi.kubevirt.io/storage.contentType": ""}, nil), nil, disk},
		{"plain claim", claim(nil, nil), nil, archive},
		{"annotated archive", claim(map[string]string{"cdi.kubevirt.io/storage.contentType": "archive"}, nil), nil, archive},
		{"DataVolume's default", claim(nil, nil), dv(""), disk},
		{"DataVolume archive", claim(nil, nil), dv(cdiv1.DataVolumeArchive), archive},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, export.ClaimVolume(tc.pvc, tc.dv)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

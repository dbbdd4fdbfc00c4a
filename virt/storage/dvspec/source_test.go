package dvspec

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"

	"github.com/virtkit/virtkit/virt/storage/importer/contract"
)

func TestSourceOf(t *testing.T) {
	http := func(f func(*cdiv1.DataVolumeSourceHTTP)) func(*cdiv1.DataVolume) {
		return func(dv *cdiv1.DataVolume) { f(dv.Spec.Source.HTTP) }
	}
	for _, tc := range []struct {
		name     string
		dv       *cdiv1.DataVolume
		kind     string
		errField string
		errText  string
	}{
		{name: "http", dv: httpDV("ns", "a", "https://example.com/d.qcow2"), kind: contract.SourceHTTP},
		{name: "http with everything", dv: httpDV("ns", "a", "http://example.com/d.raw.xz", http(func(h *cdiv1.DataVolumeSourceHTTP) {
			h.SecretRef, h.CertConfigMap, h.ExtraHeaders, h.Checksum = "creds", "ca", []string{"X-Token: 1"}, "sha256:ab12"
		})), kind: contract.SourceHTTP},
		{name: "blank", dv: httpDV("ns", "a", "", func(dv *cdiv1.DataVolume) {
			dv.Spec.Source = &cdiv1.DataVolumeSource{Blank: &cdiv1.DataVolumeBlankImage{}}
		}), kind: contract.SourceBlank},
		{name: "no source", dv: httpDV("ns", "a", "", func(dv *cdiv1.DataVolume) { dv.Spec.Source = nil }), errField: "spec.source", errText: "Required"},
		{name: "empty source", dv: httpDV("ns", "a", "", func(dv *cdiv1.DataVolume) { dv.Spec.Source = &cdiv1.DataVolumeSource{} }), errField: "spec.source"},
		{name: "sourceRef", dv: refDV(nil, "DataSource", "fedora"), kind: contract.SourceFile},
		{name: "sourceRef, own namespace named", dv: refDV(ptrTo("ns"), "DataSource", "fedora"), kind: contract.SourceFile},
		{name: "sourceRef and source", dv: httpDV("ns", "a", "https://x/y", func(dv *cdiv1.DataVolume) {
			dv.Spec.SourceRef = &cdiv1.DataVolumeSourceRef{Kind: "DataSource", Name: "fedora"}
		}), errField: "spec.sourceRef", errText: "exclusive"},
		{name: "sourceRef of another kind", dv: refDV(nil, "PersistentVolumeClaim", "fedora"), errField: "spec.sourceRef.kind", errText: "Unsupported value"},
		{name: "sourceRef of another namespace", dv: refDV(ptrTo("os-images"), "DataSource", "fedora"), kind: contract.SourceFile},
		{name: "s3", dv: httpDV("ns", "a", "", func(dv *cdiv1.DataVolume) {
			dv.Spec.Source = &cdiv1.DataVolumeSource{S3: &cdiv1.DataVolumeSourceS3{URL: "s3://b/k"}}
		}), errField: "spec.source.s3", errText: "not supported"},
		{name: "registry", dv: registryDV("docker://quay.io/containerdisks/fedora:41"), kind: contract.SourceRegistry},
		{name: "registry, pulled by the pod", dv: registryDV("docker://quay.io/a:1", func(r *cdiv1.DataVolumeSourceRegistry) {
			r.PullMethod, r.SecretRef, r.CertConfigMap, r.Platform = ptrTo(cdiv1.RegistryPullPod), ptrTo("creds"), ptrTo("ca"), &cdiv1.PlatformOptions{Architecture: "arm64"}
		}), kind: contract.SourceRegistry},
		{name: "registry, pulled by the node", dv: registryDV("docker://quay.io/a:1", func(r *cdiv1.DataVolumeSourceRegistry) { r.PullMethod = ptrTo(cdiv1.RegistryPullNode) }),
			kind: contract.SourceFile},
		{name: "registry, no scheme", dv: registryDV("quay.io/containerdisks/fedora:41"), errField: "spec.source.registry.url", errText: "docker://"},
		{name: "registry, oci archive", dv: registryDV("oci-archive:///tmp/a.tar"), errField: "spec.source.registry.url"},
		{name: "registry, unknown pull method", dv: registryDV("docker://quay.io/a:1", func(r *cdiv1.DataVolumeSourceRegistry) { r.PullMethod = ptrTo(cdiv1.RegistryPullMethod("kubelet")) }),
			errField: "spec.source.registry.pullMethod", errText: "Unsupported value"},
		{name: "registry credentials, node pull", dv: registryDV("docker://quay.io/a:1", func(r *cdiv1.DataVolumeSourceRegistry) {
			r.PullMethod, r.SecretRef = ptrTo(cdiv1.RegistryPullNode), ptrTo("creds")
		}), errField: "spec.source.registry.secretRef", errText: "image pull secrets"},
		{name: "registry CAs, node pull", dv: registryDV("docker://quay.io/a:1", func(r *cdiv1.DataVolumeSourceRegistry) {
			r.PullMethod, r.CertConfigMap = ptrTo(cdiv1.RegistryPullNode), ptrTo("ca")
		}), errField: "spec.source.registry.certConfigMap", errText: "pullMethod node"},
		{name: "registry platform, node pull", dv: registryDV("docker://quay.io/a:1", func(r *cdiv1.DataVolumeSourceRegistry) {
			r.PullMethod, r.Platform = ptrTo(cdiv1.RegistryPullNode), &cdiv1.PlatformOptions{Architecture: "arm64"}
		}), errField: "spec.source.registry.platform", errText: "pullMethod node"},
		{name: "pvc", dv: cloneDV("", "golden"), kind: contract.SourceFile},
		{name: "pvc, same namespace named", dv: cloneDV("ns", "golden"), kind: contract.SourceFile},
		{name: "pvc of another namespace", dv: cloneDV("images", "golden"), kind: contract.SourceFile},
		{name: "pvc of another namespace, same name", dv: cloneDV("images", "a"), kind: contract.SourceFile},
		{name: "pvc, no name", dv: cloneDV("", ""), errField: "spec.source.pvc.name", errText: "Required"},
		{name: "snapshot", dv: snapshotDV("", "golden-snap"), kind: contract.SourceFile},
		{name: "snapshot, same namespace named", dv: snapshotDV("ns", "golden-snap"), kind: contract.SourceFile},
		{name: "snapshot, no name", dv: snapshotDV("", ""), errField: "spec.source.snapshot.name", errText: "Required"},
		{name: "snapshot of another namespace", dv: snapshotDV("images", "golden-snap"), kind: contract.SourceFile},
		{name: "pvc, itself", dv: cloneDV("", "a"), errField: "spec.source.pvc.name", errText: "its own claim"},
		{name: "no url", dv: httpDV("ns", "a", ""), errField: "spec.source.http.url", errText: "Required"},
		{name: "ftp", dv: httpDV("ns", "a", "ftp://example.com/d"), errField: "spec.source.http.url", errText: "http or https"},
		{name: "credentials in the URL", dv: httpDV("ns", "a", "https://me:secret@example.com/d"), errField: "spec.source.http.url", errText: "secretRef"},
		{name: "header without a colon", dv: httpDV("ns", "a", "https://example.com/d", http(func(h *cdiv1.DataVolumeSourceHTTP) { h.ExtraHeaders = []string{"nocolon"} })),
			errField: "spec.source.http.extraHeaders[0]"},
		{name: "secret headers", dv: httpDV("ns", "a", "https://example.com/d", http(func(h *cdiv1.DataVolumeSourceHTTP) { h.SecretExtraHeaders = []string{"s"} })),
			errField: "spec.source.http.secretExtraHeaders"},
		{name: "checksum not hex", dv: httpDV("ns", "a", "https://example.com/d", http(func(h *cdiv1.DataVolumeSourceHTTP) { h.Checksum = "sha256:xyz" })),
			errField: "spec.source.http.checksum"},
		{name: "checksum algorithm", dv: httpDV("ns", "a", "https://example.com/d", http(func(h *cdiv1.DataVolumeSourceHTTP) { h.Checksum = "crc32:ab" })),
			errField: "spec.source.http.checksum", errText: "Unsupported value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, err := SourceOf(tc.dv)
			if tc.errField == "" {
				if err != nil {
					t.Fatalf("SourceOf: %v", err)
				}
				if src.Kind != tc.kind {
					t.Errorf("kind %q, want %q", src.Kind, tc.kind)
				}
				return
			}
			if err == nil {
				t.Fatalf("SourceOf = %+v, want an error at %s", src, tc.errField)
			}
			if err.Field != tc.errField || !strings.Contains(err.Error(), tc.errText) {
				t.Errorf("error %q at %s, want one at %s containing %q", err.Error(), err.Field, tc.errField, tc.errText)
			}
			if strings.Contains(err.Error(), "secret@") {
				t.Errorf("error %q shows the URL's password", err.Error())
			}
		})
	}
}

func TestClaim(t *testing.T) {
	src := Source{Kind: contract.SourceHTTP, HTTP: &cdiv1.DataVolumeSourceHTTP{URL: "https://example.com/d.qcow2"}}
	block := corev1.PersistentVolumeBlock
	for _, tc := range []struct {
		name     string
		dv       *cdiv1.DataVolume
		size     string
		modes    []corev1.PersistentVolumeAccessMode
		errField string
	}{
		// 64 MiB of disk plus 6 % for the file system: 67108864 × 1.06, rounded up.
		{name: "storage", dv: httpDV("ns", "a", ""), size: "71135396", modes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}},
		{name: "storage, block: no overhead", dv: httpDV("ns", "a", "", func(dv *cdiv1.DataVolume) { dv.Spec.Storage.VolumeMode = &block }), size: "64Mi",
			modes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}},
		{name: "pvc as given", dv: httpDV("ns", "a", "", func(dv *cdiv1.DataVolume) {
			dv.Spec.PVC = &corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
				Resources: dv.Spec.Storage.Resources}
			dv.Spec.Storage = nil
		}), size: "64Mi", modes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}},
		{name: "neither", dv: httpDV("ns", "a", "", func(dv *cdiv1.DataVolume) { dv.Spec.Storage = nil }), errField: "spec.storage"},
		{name: "no size", dv: httpDV("ns", "a", "", func(dv *cdiv1.DataVolume) { dv.Spec.Storage.Resources.Requests = nil }),
			errField: "spec.storage.resources.requests.storage"},
		{name: "archive content", dv: httpDV("ns", "a", "", func(dv *cdiv1.DataVolume) { dv.Spec.ContentType = cdiv1.DataVolumeArchive }),
			size: "71135396", modes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}},
		{name: "unknown content", dv: httpDV("ns", "a", "", func(dv *cdiv1.DataVolume) { dv.Spec.ContentType = "iso" }),
			errField: "spec.contentType"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pvc, err := Claim(tc.dv, src, contract.DefaultFilesystemOverhead, nil)
			if tc.errField != "" {
				if err == nil || err.Field != tc.errField {
					t.Fatalf("Claim: %v, want an error at %s", err, tc.errField)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
			if want := resourceOf(tc.size); got.Cmp(want) != 0 {
				t.Errorf("size %s, want %s", got.String(), want.String())
			}
			if len(pvc.Spec.AccessModes) != len(tc.modes) || pvc.Spec.AccessModes[0] != tc.modes[0] {
				t.Errorf("access modes %v, want %v", pvc.Spec.AccessModes, tc.modes)
			}
			if pvc.Name != "a" || pvc.Namespace != "ns" || len(pvc.OwnerReferences) != 1 || pvc.OwnerReferences[0].UID != "dv-uid" ||
				!*pvc.OwnerReferences[0].Controller {
				t.Errorf("claim %s/%s owned by %+v, want ns/a controlled by the DataVolume", pvc.Namespace, pvc.Name, pvc.OwnerReferences)
			}
			if pvc.Annotations[AnnEndpoint] != "https://example.com/d.qcow2" || pvc.Annotations[AnnSource] != "http" {
				t.Errorf("annotations %v", pvc.Annotations)
			}
		})
	}
}

// TestClaimOfAnArchive: as CDI, an archive comes from an http or upload
// source into a Filesystem claim, which says its content type.
func TestClaimOfAnArchive(t *testing.T) {
	archive := func(dv *cdiv1.DataVolume) { dv.Spec.ContentType = cdiv1.DataVolumeArchive }
	block := corev1.PersistentVolumeBlock
	upload := Source{Kind: contract.SourceUpload}
	pvc, err := Claim(httpDV("ns", "a", "", archive), upload, contract.DefaultFilesystemOverhead,
		[]cdiv1.ClaimPropertySet{{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}, VolumeMode: &block}})
	if err != nil {
		t.Fatal(err)
	}
	if pvc.Annotations[AnnContentType] != "archive" || pvc.Spec.VolumeMode == nil || *pvc.Spec.VolumeMode != corev1.PersistentVolumeFilesystem {
		t.Errorf("claim annotations %v, volume mode %v: want archive content in a Filesystem claim", pvc.Annotations, pvc.Spec.VolumeMode)
	}
	for _, tc := range []struct {
		name     string
		dv       *cdiv1.DataVolume
		src      Source
		errField string
	}{
		{"block storage", httpDV("ns", "a", "", archive, func(dv *cdiv1.DataVolume) { dv.Spec.Storage.VolumeMode = &block }), upload, "spec.storage.volumeMode"},
		{"block pvc", httpDV("ns", "a", "", archive, func(dv *cdiv1.DataVolume) {
			dv.Spec.PVC = &corev1.PersistentVolumeClaimSpec{VolumeMode: &block, Resources: dv.Spec.Storage.Resources}
			dv.Spec.Storage = nil
		}), upload, "spec.pvc.volumeMode"},
		{"registry", httpDV("ns", "a", "", archive), Source{Kind: contract.SourceFile, Image: "docker://example.com/disk"}, "spec.contentType"},
		{"blank", httpDV("ns", "a", "", archive), Source{Kind: contract.SourceBlank}, "spec.contentType"},
	} {
		if _, err := Claim(tc.dv, tc.src, contract.DefaultFilesystemOverhead, nil); err == nil || err.Field != tc.errField {
			t.Errorf("%s: %v, want an error at %s", tc.name, err, tc.errField)
		}
	}
}

func registryDV(url string, change ...func(*cdiv1.DataVolumeSourceRegistry)) *cdiv1.DataVolume {
	return httpDV("ns", "a", "", func(dv *cdiv1.DataVolume) {
		r := &cdiv1.DataVolumeSourceRegistry{URL: &url}
		for _, f := range change {
			f(r)
		}
		dv.Spec.Source = &cdiv1.DataVolumeSource{Registry: r}
	})
}

func cloneDV(ns, name string) *cdiv1.DataVolume {
	return httpDV("ns", "a", "", func(dv *cdiv1.DataVolume) {
		dv.Spec.Source = &cdiv1.DataVolumeSource{PVC: &cdiv1.DataVolumeSourcePVC{Namespace: ns, Name: name}}
	})
}

func refDV(ns *string, kind, name string) *cdiv1.DataVolume {
	return httpDV("ns", "a", "", func(dv *cdiv1.DataVolume) {
		dv.Spec.Source = nil
		dv.Spec.SourceRef = &cdiv1.DataVolumeSourceRef{Kind: kind, Namespace: ns, Name: name}
	})
}

// TestClaimOfACloneTakesItsSourceSize: a clone's spec.storage without a
// size passes admission, and its claim takes the source claim's size once
// the controller knows it; any other source needs a size.
func TestClaimOfACloneTakesItsSourceSize(t *testing.T) {
	noSize := func(dv *cdiv1.DataVolume) *cdiv1.DataVolume {
		dv.Spec.Storage.Resources.Requests = nil
		return dv
	}
	clone := noSize(cloneDV("", "golden"))
	src, ferr := SourceOf(clone)
	if ferr != nil {
		t.Fatal(ferr)
	}
	if !NeedsSourceSize(clone, src) {
		t.Fatal("NeedsSourceSize of a clone without a size: false")
	}
	pvc, ferr := Claim(clone, src, contract.DefaultFilesystemOverhead, nil)
	if ferr != nil {
		t.Fatalf("Claim of a clone without a size, before the source is read: %v", ferr)
	}
	if _, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
		t.Errorf("claim size %v before the source's is known", pvc.Spec.Resources.Requests)
	}
	size := resourceOf("5Gi")
	src.ClaimSize = &size
	pvc, ferr = Claim(clone, src, contract.DefaultFilesystemOverhead, nil)
	if ferr != nil {
		t.Fatal(ferr)
	}
	if got := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; got.Cmp(size) != 0 {
		t.Errorf("claim size %s, want the source's 5Gi", got.String())
	}
	http := noSize(httpDV("ns", "a", "https://example.com/d"))
	hsrc, _ := SourceOf(http)
	if NeedsSourceSize(http, hsrc) {
		t.Error("NeedsSourceSize of an import: true")
	}
	if _, ferr := Claim(http, hsrc, contract.DefaultFilesystemOverhead, nil); ferr == nil || ferr.Field != "spec.storage.resources.requests.storage" {
		t.Errorf("Claim of an import without a size: %v", ferr)
	}
}

// TestClaimFromStorageProfile: spec.storage takes what it does not say
// from the StorageProfile's property sets, the first of its volume mode.
func TestClaimFromStorageProfile(t *testing.T) {
	block, fs := corev1.PersistentVolumeBlock, corev1.PersistentVolumeFilesystem
	sets := []cdiv1.ClaimPropertySet{
		{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}, VolumeMode: &block},
		{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, VolumeMode: &fs},
	}
	for _, tc := range []struct {
		name     string
		mode     *corev1.PersistentVolumeMode
		sets     []cdiv1.ClaimPropertySet
		wantMode corev1.PersistentVolumeMode
		wantAM   corev1.PersistentVolumeAccessMode
	}{
		{"the first set", nil, sets, block, corev1.ReadWriteMany},
		{"the set of its mode", &fs, sets, fs, corev1.ReadWriteOnce},
		{"no profile", nil, nil, fs, corev1.ReadWriteOnce},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dv := httpDV("ns", "a", "https://example.com/d.qcow2", func(dv *cdiv1.DataVolume) { dv.Spec.Storage.VolumeMode = tc.mode })
			src, _ := SourceOf(dv)
			pvc, err := Claim(dv, src, contract.DefaultFilesystemOverhead, tc.sets)
			if err != nil {
				t.Fatal(err)
			}
			if *pvc.Spec.VolumeMode != tc.wantMode || len(pvc.Spec.AccessModes) != 1 || pvc.Spec.AccessModes[0] != tc.wantAM {
				t.Errorf("claim %s %v, want %s %s", *pvc.Spec.VolumeMode, pvc.Spec.AccessModes, tc.wantMode, tc.wantAM)
			}
		})
	}
}

// snapshotDV restores the VolumeSnapshot ns/name ("" ns: its own).
func snapshotDV(ns, name string) *cdiv1.DataVolume {
	return httpDV("ns", "a", "", func(dv *cdiv1.DataVolume) {
		dv.Spec.Source = &cdiv1.DataVolumeSource{Snapshot: &cdiv1.DataVolumeSourceSnapshot{Namespace: ns, Name: name}}
	})
}

func TestRegistryPull(t *testing.T) {
	src, err := SourceOf(registryDV("docker://quay.io/a:1", func(r *cdiv1.DataVolumeSourceRegistry) {
		r.SecretRef, r.CertConfigMap, r.Platform = ptrTo("creds"), ptrTo("ca"), &cdiv1.PlatformOptions{Architecture: "arm64"}
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := Source{Kind: contract.SourceRegistry, Image: "quay.io/a:1", Registry: &RegistryPull{SecretRef: "creds", CertConfigMap: "ca", Architecture: "arm64"}}
	if diff := cmp.Diff(want, src); diff != "" {
		t.Errorf("SourceOf (-want +got):\n%s", diff)
	}
	if d := src.Describe(); d != "docker://quay.io/a:1" {
		t.Errorf("Describe() = %q", d)
	}
}

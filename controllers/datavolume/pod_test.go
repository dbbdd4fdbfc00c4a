package datavolume

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/yaml"

	"gotest.tools/v3/assert"
	"gotest.tools/v3/golden"

	"github.com/virtkit/virtkit/virt/storage/dvspec"
	"github.com/virtkit/virtkit/virt/storage/importer/contract"
)

// TestImporterPodGolden renders the importer pod of an https source with
// every option (a CA bundle, credentials, a header, a checksum) into a
// 1 GiB claim, and compares it with testdata/importer-pod.yaml; regenerate
// with go test -update.
func TestImporterPodGolden(t *testing.T) {
	dv := httpDV("demo", "fedora", "https://images.example.com/fedora.qcow2", func(dv *cdiv1.DataVolume) {
		h := dv.Spec.Source.HTTP
		h.CertConfigMap, h.SecretRef, h.ExtraHeaders, h.Checksum = "images-ca", "images-creds", []string{"X-Mirror: eu"}, "sha256:0123abcd"
	})
	src, ferr := dvspec.SourceOf(dv)
	if ferr != nil {
		t.Fatal(ferr)
	}
	claim := boundClaim("fedora", "1Gi")
	claim.Namespace = "demo"
	// An earlier pod found a qcow2 and asked for scratch space.
	claim.Annotations = map[string]string{dvspec.AnnRequiresScratch: "true"}
	pod := ImporterPod(dv, claim, src, PodOptions{Image: "virtkit/virt-importer:v0.1.0", PullPolicy: corev1.PullIfNotPresent})
	b, err := yaml.Marshal(pod)
	assert.NilError(t, err)
	golden.Assert(t, string(b), "importer-pod.yaml")

	// The command is the contract's: the importer parses it back.
	args, err := contract.Parse(pod.Spec.Containers[0].Command[1:], nil)
	assert.NilError(t, err)
	assert.Equal(t, args.Size, contract.UsableSpace(1<<30, contract.DefaultFilesystemOverhead))
}

// TestImporterPodScratch: a pod mounts a scratch claim when its claim asks
// for one and the source may hold an image to convert.
func TestImporterPodScratch(t *testing.T) {
	block := corev1.PersistentVolumeBlock
	for _, tc := range []struct {
		name   string
		ask    bool
		change func(*cdiv1.DataVolume, *corev1.PersistentVolumeClaim)
		want   bool
	}{
		{name: "asked", ask: true, want: true},
		{name: "not asked", ask: false, want: false},
		{name: "a block claim, asked", ask: true, want: true, change: func(_ *cdiv1.DataVolume, c *corev1.PersistentVolumeClaim) { c.Spec.VolumeMode = &block }},
		{name: "blank", ask: true, want: false, change: func(dv *cdiv1.DataVolume, _ *corev1.PersistentVolumeClaim) {
			dv.Spec.Source = &cdiv1.DataVolumeSource{Blank: &cdiv1.DataVolumeBlankImage{}}
		}},
		{name: "an archive", ask: true, want: false, change: func(dv *cdiv1.DataVolume, _ *corev1.PersistentVolumeClaim) {
			dv.Spec.ContentType = cdiv1.DataVolumeArchive
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dv := httpDV("ns", "d", "https://images.example.com/d.qcow2")
			claim := boundClaim("d", "1Gi")
			if tc.ask {
				claim.Annotations = map[string]string{dvspec.AnnRequiresScratch: "true"}
			}
			if tc.change != nil {
				tc.change(dv, claim)
			}
			src, ferr := dvspec.SourceOf(dv)
			if ferr != nil {
				t.Fatal(ferr)
			}
			pod := ImporterPod(dv, claim, src, PodOptions{Image: "img"})
			args, err := contract.Parse(pod.Spec.Containers[0].Command[1:], nil)
			assert.NilError(t, err)
			if got := mountsScratch(pod); got != tc.want || (args.Scratch == contract.ScratchDir) != tc.want {
				t.Errorf("mounts a scratch claim: %v, --scratch %q; want %v", got, args.Scratch, tc.want)
			}
		})
	}
}

// TestUploadPodScratch: a user's upload always gets scratch space, as
// CDI's, without the claim asking; a clone's stream or an archive never.
func TestUploadPodScratch(t *testing.T) {
	for _, tc := range []struct {
		name           string
		clone, archive bool
		want           bool
	}{
		{name: "an upload", want: true},
		{name: "a clone's stream", clone: true, want: false},
		{name: "an archive", archive: true, want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dv := &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "up"},
				Spec: cdiv1.DataVolumeSpec{Source: &cdiv1.DataVolumeSource{Upload: &cdiv1.DataVolumeSourceUpload{}}}}
			if tc.archive {
				dv.Spec.ContentType = cdiv1.DataVolumeArchive
			}
			pod := UploadPod(dv, boundClaim("up", "1Gi"), PodOptions{Image: "img"}, []byte("cert"), tc.clone)
			args, err := contract.Parse(pod.Spec.Containers[0].Command[1:], nil)
			assert.NilError(t, err)
			if got := mountsScratch(pod); got != tc.want || (args.Scratch == contract.ScratchDir) != tc.want {
				t.Errorf("mounts a scratch claim: %v, --scratch %q; want %v", got, args.Scratch, tc.want)
			}
		})
	}
}

// TestScratchClaim: the scratch claim holds what its claim's disk can,
// with its own class's overhead, owned by the pod.
func TestScratchClaim(t *testing.T) {
	claim := boundClaim("d", "1Gi")
	claim.Spec.StorageClassName = ptr.To("fast")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "importer-d", UID: "pod-uid"}}
	c := ScratchClaim(claim, pod, "", 0.06, 0.1)
	// 1 GiB holds a disk of 966 MiB (its 6%); that plus the scratch
	// class's 10% is 1062.6 MiB, aligned up.
	got := c.Spec.Resources.Requests[corev1.ResourceStorage]
	assert.Equal(t, got.Value(), int64(1063<<20))
	assert.Equal(t, c.Name, "d-scratch")
	assert.Equal(t, ptr.Deref(c.Spec.StorageClassName, ""), "fast")
	assert.Assert(t, metav1.IsControlledBy(c, pod), "owners %+v", c.OwnerReferences)
	if other := ScratchClaim(claim, pod, "scratchy", 0.06, 0); ptr.Deref(other.Spec.StorageClassName, "") != "scratchy" {
		t.Errorf("the CDIConfig's scratch class not used: %v", other.Spec.StorageClassName)
	}
}

// TestImporterPodBlock: a block claim is a device of the pod, written
// whole; a blank source needs no scratch space.
func TestImporterPodBlock(t *testing.T) {
	block := corev1.PersistentVolumeBlock
	dv := httpDV("ns", "raw", "", func(dv *cdiv1.DataVolume) {
		dv.Spec.Source = &cdiv1.DataVolumeSource{Blank: &cdiv1.DataVolumeBlankImage{}}
	})
	claim := boundClaim("raw", "1Gi")
	claim.Spec.VolumeMode = &block
	pod := ImporterPod(dv, claim, dvspec.Source{Kind: contract.SourceBlank}, PodOptions{Image: "img"})
	c := pod.Spec.Containers[0]
	assert.DeepEqual(t, c.VolumeDevices, []corev1.VolumeDevice{{Name: "cdi-data-vol", DevicePath: contract.BlockDevice}})
	assert.Equal(t, len(c.VolumeMounts), 0)
	args, err := contract.Parse(c.Command[1:], nil)
	assert.NilError(t, err)
	assert.DeepEqual(t, args, contract.Args{Source: contract.SourceBlank, Target: contract.BlockDevice, Block: true, Size: 1 << 30, OwnerUID: "dv-uid"})
}

// TestImporterPodArchive: an archive is extracted into the claim's file
// system, within its usable space, never preallocated.
func TestImporterPodArchive(t *testing.T) {
	dv := httpDV("ns", "files", "https://images.example.com/files.tar.gz", func(dv *cdiv1.DataVolume) {
		dv.Spec.ContentType = cdiv1.DataVolumeArchive
		dv.Spec.Preallocation = ptr.To(true)
	})
	src, ferr := dvspec.SourceOf(dv)
	if ferr != nil {
		t.Fatal(ferr)
	}
	pod := ImporterPod(dv, boundClaim("files", "1Gi"), src, PodOptions{Image: "img"})
	c := pod.Spec.Containers[0]
	assert.DeepEqual(t, c.VolumeMounts, []corev1.VolumeMount{{Name: "cdi-data-vol", MountPath: contract.DataDir}})
	args, err := contract.Parse(c.Command[1:], nil)
	assert.NilError(t, err)
	assert.Equal(t, args.Archive, true)
	assert.Equal(t, args.Preallocate, false)
	assert.Equal(t, args.Target, contract.DataDir)
	assert.Equal(t, args.Size, contract.UsableSpace(1<<30, contract.DefaultFilesystemOverhead))
}

// TestImporterPodRegistry: with CDI's default pull method the importer
// pulls the image itself, with the DataVolume's credentials and CAs, and
// skips the certificate check only for a registry the CDIConfig lists;
// with pullMethod node the node pulls it as an image volume. Compared
// with testdata/importer-pod-registry.yaml; regenerate with go test
// -update.
func TestImporterPodRegistry(t *testing.T) {
	registry := func(url string, f func(*cdiv1.DataVolumeSourceRegistry)) *cdiv1.DataVolume {
		return httpDV("demo", "fedora", "", func(dv *cdiv1.DataVolume) {
			dv.Spec.Source = &cdiv1.DataVolumeSource{Registry: &cdiv1.DataVolumeSourceRegistry{URL: ptr.To(url)}}
			f(dv.Spec.Source.Registry)
		})
	}
	render := func(dv *cdiv1.DataVolume, o PodOptions) (*corev1.Pod, contract.Args) {
		t.Helper()
		src, ferr := dvspec.SourceOf(dv)
		if ferr != nil {
			t.Fatal(ferr)
		}
		claim := boundClaim("fedora", "1Gi")
		claim.Namespace = "demo"
		pod := ImporterPod(dv, claim, src, o)
		args, err := contract.Parse(pod.Spec.Containers[0].Command[1:], nil)
		assert.NilError(t, err)
		return pod, args
	}
	o := PodOptions{Image: "virtkit/virt-importer:v0.1.0", PullPolicy: corev1.PullIfNotPresent, InsecureRegistries: []string{"registry.lab:5000"}}

	pod, args := render(registry("docker://quay.io/containerdisks/fedora:41", func(r *cdiv1.DataVolumeSourceRegistry) {
		r.SecretRef, r.CertConfigMap, r.Platform = ptr.To("quay-creds"), ptr.To("quay-ca"), &cdiv1.PlatformOptions{Architecture: "arm64"}
	}), o)
	b, err := yaml.Marshal(pod)
	assert.NilError(t, err)
	golden.Assert(t, string(b), "importer-pod-registry.yaml")
	assert.Equal(t, args.Source, contract.SourceRegistry)
	assert.Equal(t, args.InsecureRegistry, false)

	_, args = render(registry("docker://registry.lab:5000/guest:v1", func(*cdiv1.DataVolumeSourceRegistry) {}), o)
	assert.Equal(t, args.InsecureRegistry, true)
	assert.Equal(t, args.CertDir, "")

	pod, args = render(registry("docker://registry.lab:5000/guest:v1", func(r *cdiv1.DataVolumeSourceRegistry) {
		r.PullMethod = ptr.To(cdiv1.RegistryPullNode)
	}), o)
	assert.Equal(t, args.Source, contract.SourceFile)
	assert.Equal(t, args.Path, contract.SourceDir+"/"+contract.ImageDiskDir)
	assert.DeepEqual(t, pod.Spec.Volumes[len(pod.Spec.Volumes)-1].Image,
		&corev1.ImageVolumeSource{Reference: "registry.lab:5000/guest:v1", PullPolicy: corev1.PullIfNotPresent})
}

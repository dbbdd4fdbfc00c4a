package storage_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/storage"
	"github.com/virtkit/virtkit/virt/storage/fake"
)

const (
	gib = int64(1) << 30
	mib = int64(1) << 20
)

var testLayout = storage.Layout{
	EphemeralDir:      "/e",
	PrivateDir:        "/p",
	ContainerDisksDir: "/c",
	HotplugDir:        "/h",
	DevDir:            "/dev",
}

// vmiWith returns a VMI named vm in ns with one disk per volume.
func vmiWith(vols ...virtv1.Volume) *virtv1.VirtualMachineInstance {
	vmi := &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "vm", Namespace: "ns", UID: "uid-1"}}
	vmi.Spec.Volumes = vols
	for _, v := range vols {
		vmi.Spec.Domain.Devices.Disks = append(vmi.Spec.Domain.Devices.Disks, virtv1.Disk{Name: v.Name})
	}
	return vmi
}

func vol(name string, src virtv1.VolumeSource) virtv1.Volume {
	return virtv1.Volume{Name: name, VolumeSource: src}
}

func pvc(claim string) virtv1.VolumeSource {
	return virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
		PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}
}

func raw(size int64) storage.ImageInfo {
	return storage.ImageInfo{Format: storage.FormatRaw, VirtualSize: size, Length: size}
}

// qcow is a fresh qcow2 image: four metadata clusters long.
func qcow(size int64) storage.ImageInfo {
	return storage.ImageInfo{Format: storage.FormatQCOW2, VirtualSize: size, Length: 4 << 16}
}

func TestPlan(t *testing.T) {
	optional := true
	tests := []struct {
		name string
		vmi  *virtv1.VirtualMachineInstance
		pod  storage.Pod
		fs   fake.FS
		want storage.Plan
	}{{
		name: "claim with a raw disk.img",
		vmi:  vmiWith(vol("root", pvc("root-claim"))),
		pod:  storage.Pod{Volumes: map[string]storage.VolumeFacts{"root": {CapacityBytes: 2 * gib, LogicalBlockSize: 512, PhysicalBlockSize: 4096}}},
		fs:   fake.FS{Images: map[string]storage.ImageInfo{"/p/vmi-disks/root/disk.img": raw(gib)}},
		want: storage.Plan{"root": {Volume: "root", Kind: storage.KindPersistentVolumeClaim, Source: storage.SourceFile,
			Path: "/p/vmi-disks/root/disk.img", Format: storage.FormatRaw, CapacityBytes: gib, LogicalBlockSize: 512, PhysicalBlockSize: 4096}},
	}, {
		name: "claim whose disk.img starts with a qcow2 header: raw all the same, as in KubeVirt",
		vmi:  vmiWith(vol("root", pvc("root-claim"))),
		pod:  storage.Pod{Volumes: map[string]storage.VolumeFacts{"root": {Path: "/mnt/claim", CapacityBytes: 2 * gib}}},
		fs:   fake.FS{Images: map[string]storage.ImageInfo{"/mnt/claim/disk.img": qcow(2 * gib)}},
		want: storage.Plan{"root": {Volume: "root", Kind: storage.KindPersistentVolumeClaim, Source: storage.SourceFile,
			Path: "/mnt/claim/disk.img", Format: storage.FormatRaw, CapacityBytes: 4 << 16}},
	}, {
		// A guest can write any header into its raw disk between two
		// starts: the next start must not follow the backing file it names.
		name: "claim whose disk.img names a backing file: raw, the file never read",
		vmi:  vmiWith(vol("root", pvc("c"))),
		fs: fake.FS{Images: map[string]storage.ImageInfo{"/p/vmi-disks/root/disk.img": {Format: storage.FormatQCOW2, VirtualSize: 100 * gib,
			Length: gib, BackingFile: "/etc/shadow", BackingFormat: "raw"}}},
		want: storage.Plan{"root": {Volume: "root", Kind: storage.KindPersistentVolumeClaim, Source: storage.SourceFile,
			Path: "/p/vmi-disks/root/disk.img", Format: storage.FormatRaw, CapacityBytes: gib}},
	}, {
		name: "claim without disk.img: created sparse, less the file system's overhead",
		vmi:  vmiWith(vol("data", pvc("data-claim"))),
		pod:  storage.Pod{Volumes: map[string]storage.VolumeFacts{"data": {CapacityBytes: gib}}},
		fs:   fake.FS{Dirs: map[string][]string{"/p/vmi-disks/data": nil}},
		want: storage.Plan{"data": {Volume: "data", Kind: storage.KindPersistentVolumeClaim, Source: storage.SourceFile,
			Path: "/p/vmi-disks/data/disk.img", Format: storage.FormatRaw, CapacityBytes: 967 * mib, Create: true}},
	}, {
		name: "a volume migration's new claim: an image of the source's size, in a larger claim",
		vmi:  migratedFrom(vmiWith(vol("data", pvc("new-claim"))), "data", "512Mi"),
		pod:  storage.Pod{Volumes: map[string]storage.VolumeFacts{"data": {CapacityBytes: gib}}},
		fs:   fake.FS{Dirs: map[string][]string{"/p/vmi-disks/data": nil}},
		want: storage.Plan{"data": {Volume: "data", Kind: storage.KindPersistentVolumeClaim, Source: storage.SourceFile,
			Path: "/p/vmi-disks/data/disk.img", Format: storage.FormatRaw, CapacityBytes: 483 * mib, Create: true}},
	}, {
		name: "a migration's new claim when the source reports its image's size: exactly that size",
		vmi: func() *virtv1.VirtualMachineInstance {
			v := migratedFrom(vmiWith(vol("data", pvc("new-claim"))), "data", "512Mi")
			v.Status.VolumeStatus = []virtv1.VolumeStatus{{Name: "data", Size: 1000 * mib}}
			return v
		}(),
		pod: storage.Pod{Volumes: map[string]storage.VolumeFacts{"data": {CapacityBytes: gib}}},
		fs:  fake.FS{Dirs: map[string][]string{"/p/vmi-disks/data": nil}},
		want: storage.Plan{"data": {Volume: "data", Kind: storage.KindPersistentVolumeClaim, Source: storage.SourceFile,
			Path: "/p/vmi-disks/data/disk.img", Format: storage.FormatRaw, CapacityBytes: 1000 * mib, Create: true}},
	}, {
		name: "read-only claim",
		vmi: vmiWith(vol("ro", virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c", ReadOnly: true}}})),
		fs: fake.FS{Images: map[string]storage.ImageInfo{"/p/vmi-disks/ro/disk.img": raw(gib)}},
		want: storage.Plan{"ro": {Volume: "ro", Kind: storage.KindPersistentVolumeClaim, Source: storage.SourceFile,
			Path: "/p/vmi-disks/ro/disk.img", Format: storage.FormatRaw, CapacityBytes: gib, ReadOnly: true}},
	}, {
		name: "block claim",
		vmi:  vmiWith(vol("blk", pvc("blk-claim"))),
		pod:  storage.Pod{Volumes: map[string]storage.VolumeFacts{"blk": {Mode: storage.VolumeModeBlock, ReadOnly: true}}},
		fs:   fake.FS{Images: map[string]storage.ImageInfo{"/dev/blk": {Format: storage.FormatRaw, VirtualSize: 8 * gib, Length: 8 * gib, Block: true}}},
		want: storage.Plan{"blk": {Volume: "blk", Kind: storage.KindPersistentVolumeClaim, Source: storage.SourceBlock,
			Path: "/dev/blk", Format: storage.FormatRaw, CapacityBytes: 8 * gib, ReadOnly: true}},
	}, {
		name: "hotpluggable data volume",
		vmi:  vmiWith(vol("hot", virtv1.VolumeSource{DataVolume: &virtv1.DataVolumeSource{Name: "dv", Hotpluggable: true}})),
		fs:   fake.FS{Images: map[string]storage.ImageInfo{"/h/hot.img": raw(gib)}},
		want: storage.Plan{"hot": {Volume: "hot", Kind: storage.KindDataVolume, Source: storage.SourceFile,
			Path: "/h/hot.img", Format: storage.FormatRaw, CapacityBytes: gib, Hotpluggable: true}},
	}, {
		// The folder of the path is mounted at the volume's claim folder
		// (a hostPath volume of the launcher pod), as in KubeVirt.
		name: "hostDisk DiskOrCreate, absent",
		vmi: vmiWith(vol("host", virtv1.VolumeSource{HostDisk: &virtv1.HostDisk{Path: "/var/data/host.img",
			Type: virtv1.HostDiskExistsOrCreate, Capacity: resource.MustParse("64Mi")}})),
		fs: fake.FS{Dirs: map[string][]string{"/p/vmi-disks/host": nil}},
		want: storage.Plan{"host": {Volume: "host", Kind: storage.KindHostDisk, Source: storage.SourceFile,
			Path: "/p/vmi-disks/host/host.img", Format: storage.FormatRaw, CapacityBytes: 64 * mib, Create: true}},
	}, {
		name: "hostDisk Disk, present",
		vmi:  vmiWith(vol("host", virtv1.VolumeSource{HostDisk: &virtv1.HostDisk{Path: "/var/data/host.img", Type: virtv1.HostDiskExists}})),
		fs:   fake.FS{Images: map[string]storage.ImageInfo{"/p/vmi-disks/host/host.img": raw(gib), "/var/data/host.img": qcow(gib)}},
		want: storage.Plan{"host": {Volume: "host", Kind: storage.KindHostDisk, Source: storage.SourceFile,
			Path: "/p/vmi-disks/host/host.img", Format: storage.FormatRaw, CapacityBytes: gib}},
	}, {
		name: "emptyDisk",
		vmi:  vmiWith(vol("scratch", virtv1.VolumeSource{EmptyDisk: &virtv1.EmptyDiskSource{Capacity: resource.MustParse("1G")}})),
		want: storage.Plan{"scratch": {Volume: "scratch", Kind: storage.KindEmptyDisk, Source: storage.SourceFile,
			Path: "/e/empty-disks/scratch.qcow2", Format: storage.FormatQCOW2, CapacityBytes: 1_000_000_000, Create: true}},
	}, {
		name: "emptyDisk kept from an earlier start in the pod",
		vmi:  vmiWith(vol("scratch", virtv1.VolumeSource{EmptyDisk: &virtv1.EmptyDiskSource{Capacity: resource.MustParse("1Gi")}})),
		fs:   fake.FS{Images: map[string]storage.ImageInfo{"/e/empty-disks/scratch.qcow2": qcow(gib)}},
		want: storage.Plan{"scratch": {Volume: "scratch", Kind: storage.KindEmptyDisk, Source: storage.SourceFile,
			Path: "/e/empty-disks/scratch.qcow2", Format: storage.FormatQCOW2, CapacityBytes: gib}},
	}, {
		name: "ephemeral: overlay on the claim's image",
		vmi: vmiWith(vol("eph", virtv1.VolumeSource{Ephemeral: &virtv1.EphemeralVolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "golden"}}})),
		fs: fake.FS{Images: map[string]storage.ImageInfo{"/p/vmi-disks/eph/disk.img": raw(2 * gib)}},
		want: storage.Plan{"eph": {Volume: "eph", Kind: storage.KindEphemeral, Source: storage.SourceFile,
			Path: "/e/disk-data/eph/disk.qcow2", Format: storage.FormatQCOW2, CapacityBytes: 2 * gib, Create: true,
			BackingPath: "/p/vmi-disks/eph/disk.img", BackingFormat: storage.FormatRaw}},
	}, {
		name: "containerDisk: overlay on disk_N.img, N the volume index",
		vmi: vmiWith(vol("ci", virtv1.VolumeSource{CloudInitNoCloud: &virtv1.CloudInitNoCloudSource{UserData: "#!/bin/sh\n"}}),
			vol("root", virtv1.VolumeSource{ContainerDisk: &virtv1.ContainerDiskSource{Image: "quay.io/x/y"}})),
		fs: fake.FS{Images: map[string]storage.ImageInfo{"/c/disk_1.img": qcow(10 * gib)}},
		want: storage.Plan{
			"ci": {Volume: "ci", Kind: storage.KindCloudInitNoCloud, Source: storage.SourceFile,
				Path: "/e/cloud-init-data/ns/vm/noCloud.iso", Format: storage.FormatRaw, ReadOnly: true, Create: true, Label: "cidata"},
			"root": {Volume: "root", Kind: storage.KindContainerDisk, Source: storage.SourceFile,
				Path: "/e/disk-data/root/disk.qcow2", Format: storage.FormatQCOW2, CapacityBytes: 10 * gib, Create: true,
				BackingPath: "/c/disk_1.img", BackingFormat: storage.FormatQCOW2},
		},
	}, {
		name: "configDrive from a secret",
		vmi: vmiWith(vol("cd", virtv1.VolumeSource{CloudInitConfigDrive: &virtv1.CloudInitConfigDriveSource{
			UserDataSecretRef: &corev1.LocalObjectReference{Name: "s"}}})),
		pod: storage.Pod{Secrets: map[string]map[string][]byte{"s": {"userData": []byte("#cloud-config\n")}}},
		want: storage.Plan{"cd": {Volume: "cd", Kind: storage.KindCloudInitConfigDrive, Source: storage.SourceFile,
			Path: "/e/cloud-init-data/ns/vm/configdrive.iso", Format: storage.FormatRaw, ReadOnly: true, Create: true, Label: "config-2"}},
	}, {
		name: "config volumes",
		vmi: vmiWith(
			vol("cm", virtv1.VolumeSource{ConfigMap: &virtv1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "app"}, VolumeLabel: "OEMDRV"}}),
			vol("gone", virtv1.VolumeSource{Secret: &virtv1.SecretVolumeSource{SecretName: "x", Optional: &optional}}),
			vol("sa", virtv1.VolumeSource{ServiceAccount: &virtv1.ServiceAccountVolumeSource{ServiceAccountName: "default"}}),
			vol("down", virtv1.VolumeSource{DownwardAPI: &virtv1.DownwardAPIVolumeSource{}}),
		),
		pod: storage.Pod{Volumes: map[string]storage.VolumeFacts{"down": {Path: "/pod/downward"}}},
		fs: fake.FS{Dirs: map[string][]string{
			"/p/config-map/cm":        {"ks.cfg", "nested/app-config.yaml"},
			"/p/service-account-disk": {"ca.crt", "namespace", "token"},
			"/pod/downward":           {"labels"},
		}},
		want: storage.Plan{
			"cm": {Volume: "cm", Kind: storage.KindConfigMap, Source: storage.SourceFile, Path: "/p/config-disks/cm.iso",
				Format: storage.FormatRaw, ReadOnly: true, Create: true, Label: "OEMDRV", ContentDir: "/p/config-map/cm"},
			"gone": {Volume: "gone", Kind: storage.KindSecret, Source: storage.SourceFile, Path: "/p/config-disks/gone.iso",
				Format: storage.FormatRaw, ReadOnly: true, Create: true},
			"sa": {Volume: "sa", Kind: storage.KindServiceAccount, Source: storage.SourceFile, Path: "/p/config-disks/sa.iso",
				Format: storage.FormatRaw, ReadOnly: true, Create: true, ContentDir: "/p/service-account-disk"},
			"down": {Volume: "down", Kind: storage.KindDownwardAPI, Source: storage.SourceFile, Path: "/p/config-disks/down.iso",
				Format: storage.FormatRaw, ReadOnly: true, Create: true, ContentDir: "/pod/downward"},
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := storage.New(storage.WithLayout(testLayout), storage.WithInspector(tc.fs))
			got, err := m.Plan(context.Background(), tc.vmi, tc.pod)
			if err != nil {
				t.Fatalf("Plan: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPlanErrors(t *testing.T) {
	tests := []struct {
		name string
		vmi  *virtv1.VirtualMachineInstance
		pod  storage.Pod
		fs   fake.FS
		// want: one entry per expected error: sentinel and words of its message.
		want []wantErr
	}{{
		name: "image larger than its claim",
		vmi:  vmiWith(vol("root", pvc("c"))),
		pod:  storage.Pod{Volumes: map[string]storage.VolumeFacts{"root": {CapacityBytes: gib}}},
		fs:   fake.FS{Images: map[string]storage.ImageInfo{"/p/vmi-disks/root/disk.img": raw(2 * gib)}},
		want: []wantErr{{storage.ErrImageTooLarge, `volume "root" (spec.volumes[0].persistentVolumeClaim): /p/vmi-disks/root/disk.img: the image's 2147483648 bytes exceed the claim's capacity 1073741824 bytes: image larger than its volume`}},
	}, {
		name: "a volume migration's new claim smaller than the source",
		vmi:  migratedFrom(vmiWith(vol("data", pvc("new-claim"))), "data", "2Gi"),
		pod:  storage.Pod{Volumes: map[string]storage.VolumeFacts{"data": {CapacityBytes: gib}}},
		fs:   fake.FS{Dirs: map[string][]string{"/p/vmi-disks/data": nil}},
		want: []wantErr{{storage.ErrImageTooLarge, "the migration copies 2147483648 bytes into this claim, more than its capacity 1073741824 bytes"}},
	}, {
		name: "unknown format",
		vmi:  vmiWith(vol("root", virtv1.VolumeSource{ContainerDisk: &virtv1.ContainerDiskSource{Image: "x"}})),
		fs:   fake.FS{Images: map[string]storage.ImageInfo{"/c/disk_0.img": {Detected: "vmdk", VirtualSize: gib, Length: gib}}},
		want: []wantErr{{storage.ErrUnknownFormat, `volume "root" (spec.volumes[0].containerDisk): /c/disk_0.img: a vmdk image; only raw and qcow2 are supported: unknown image format`}},
	}, {
		name: "containerDisk with a backing file",
		vmi:  vmiWith(vol("root", virtv1.VolumeSource{ContainerDisk: &virtv1.ContainerDiskSource{Image: "x"}})),
		fs: fake.FS{Images: map[string]storage.ImageInfo{"/c/disk_0.img": {Format: storage.FormatQCOW2, VirtualSize: gib,
			BackingFile: "/etc/shadow", BackingFormat: "raw"}}},
		want: []wantErr{{storage.ErrUnsafeImage, `backing file "/etc/shadow"`}},
	}, {
		name: "hostDisk that is a block device",
		vmi:  vmiWith(vol("host", virtv1.VolumeSource{HostDisk: &virtv1.HostDisk{Path: "/dev/sda", Type: virtv1.HostDiskExists}})),
		fs:   fake.FS{Images: map[string]storage.ImageInfo{"/p/vmi-disks/host/sda": {Format: storage.FormatRaw, VirtualSize: gib, Length: gib, Block: true}}},
		want: []wantErr{{storage.ErrInvalid, "a block device; a hostDisk is a disk image file"}},
	}, {
		name: "hostDisk naming no file",
		vmi:  vmiWith(vol("host", virtv1.VolumeSource{HostDisk: &virtv1.HostDisk{Path: "/var/..", Type: virtv1.HostDiskExists}})),
		want: []wantErr{{storage.ErrInvalid, `volume "host" (spec.volumes[0].hostDisk): path "/var/.." names no file in a folder`}},
	}, {
		name: "hostDisk DiskOrCreate whose folder is not mounted",
		vmi: vmiWith(vol("host", virtv1.VolumeSource{HostDisk: &virtv1.HostDisk{Path: "/var/data/host.img",
			Type: virtv1.HostDiskExistsOrCreate, Capacity: resource.MustParse("64Mi")}})),
		want: []wantErr{{storage.ErrNotFound, "/p/vmi-disks/host: the folder of /var/data/host.img is not mounted in the pod"}},
	}, {
		name: "containerDisk with an external data file",
		vmi:  vmiWith(vol("root", virtv1.VolumeSource{ContainerDisk: &virtv1.ContainerDiskSource{Image: "x"}})),
		fs:   fake.FS{Images: map[string]storage.ImageInfo{"/c/disk_0.img": {Format: storage.FormatQCOW2, VirtualSize: gib, ExternalData: true}}},
		want: []wantErr{{storage.ErrUnsafeImage, "external data file"}},
	}, {
		name: "missing block device",
		vmi:  vmiWith(vol("blk", pvc("c"))),
		pod:  storage.Pod{Volumes: map[string]storage.VolumeFacts{"blk": {Mode: storage.VolumeModeBlock}}},
		want: []wantErr{{storage.ErrNotFound, `volume "blk" (spec.volumes[0].persistentVolumeClaim): /dev/blk: the claim's block device is missing: not found`}},
	}, {
		name: "block claim that is a file",
		vmi:  vmiWith(vol("blk", pvc("c"))),
		pod:  storage.Pod{Volumes: map[string]storage.VolumeFacts{"blk": {Mode: storage.VolumeModeBlock, Path: "/x"}}},
		fs:   fake.FS{Images: map[string]storage.ImageInfo{"/x": raw(gib)}},
		want: []wantErr{{storage.ErrInvalid, "not a block device"}},
	}, {
		name: "claim not mounted",
		vmi:  vmiWith(vol("data", pvc("c"))),
		pod:  storage.Pod{Volumes: map[string]storage.VolumeFacts{"data": {CapacityBytes: gib}}},
		want: []wantErr{{storage.ErrNotFound, "/p/vmi-disks/data: the claim is not mounted in the pod"}},
	}, {
		name: "read-only claim without disk.img",
		vmi:  vmiWith(vol("data", pvc("c"))),
		pod:  storage.Pod{Volumes: map[string]storage.VolumeFacts{"data": {CapacityBytes: gib, ReadOnly: true}}},
		fs:   fake.FS{Dirs: map[string][]string{"/p/vmi-disks/data": nil}},
		want: []wantErr{{storage.ErrNotFound, "read-only and holds no disk image"}},
	}, {
		name: "claim without disk.img and unknown capacity",
		vmi:  vmiWith(vol("data", pvc("c"))),
		fs:   fake.FS{Dirs: map[string][]string{"/p/vmi-disks/data": nil}},
		want: []wantErr{{storage.ErrInvalid, "capacity is unknown"}},
	}, {
		name: "hostDisk type Disk missing",
		vmi:  vmiWith(vol("host", virtv1.VolumeSource{HostDisk: &virtv1.HostDisk{Path: "/var/h.img", Type: virtv1.HostDiskExists}})),
		want: []wantErr{{storage.ErrNotFound, `volume "host" (spec.volumes[0].hostDisk): /p/vmi-disks/host/h.img: the host disk /var/h.img is missing (type Disk): not found`}},
	}, {
		name: "missing ephemeral base and container disk, reported together",
		vmi: vmiWith(
			vol("eph", virtv1.VolumeSource{Ephemeral: &virtv1.EphemeralVolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "g"}}}),
			vol("root", virtv1.VolumeSource{ContainerDisk: &virtv1.ContainerDiskSource{Image: "x"}})),
		want: []wantErr{
			{storage.ErrNotFound, `volume "eph" (spec.volumes[0].ephemeral): /p/vmi-disks/eph/disk.img: the claim's disk image is missing`},
			{storage.ErrNotFound, `volume "root" (spec.volumes[1].containerDisk): /c/disk_1.img: the container disk image is missing`},
		},
	}, {
		name: "cloud-init secret missing",
		vmi: vmiWith(vol("ci", virtv1.VolumeSource{CloudInitNoCloud: &virtv1.CloudInitNoCloudSource{
			UserDataSecretRef: &corev1.LocalObjectReference{Name: "nope"}}})),
		want: []wantErr{{storage.ErrInvalid, `user data: secret "nope" is not available in the pod`}},
	}, {
		name: "config map key an ISO cannot carry",
		vmi: vmiWith(vol("cm", virtv1.VolumeSource{ConfigMap: &virtv1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}})),
		fs:   fake.FS{Dirs: map[string][]string{"/p/config-map/cm": {"App.Config"}}},
		want: []wantErr{{storage.ErrInvalid, `file "App.Config"`}},
	}, {
		name: "config map not in the pod",
		vmi: vmiWith(vol("cm", virtv1.VolumeSource{ConfigMap: &virtv1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}})),
		want: []wantErr{{storage.ErrNotFound, "the configMap's files are not in the pod"}},
	}, {
		name: "emptyDisk without capacity",
		vmi:  vmiWith(vol("e", virtv1.VolumeSource{EmptyDisk: &virtv1.EmptyDiskSource{}})),
		want: []wantErr{{storage.ErrInvalid, "capacity 0 must be positive"}},
	}, {
		name: "unsupported source",
		vmi:  vmiWith(vol("sys", virtv1.VolumeSource{Sysprep: &virtv1.SysprepSource{}})),
		want: []wantErr{{storage.ErrUnsupported, `volume "sys" (spec.volumes[0])`}},
	}, {
		name: "disk without a volume",
		vmi: &virtv1.VirtualMachineInstance{Spec: virtv1.VirtualMachineInstanceSpec{Domain: virtv1.DomainSpec{
			Devices: virtv1.Devices{Disks: []virtv1.Disk{{Name: "ghost"}}}}}},
		want: []wantErr{{storage.ErrInvalid, `volume "ghost" (spec.domain.devices.disks[0].name): no volume of this name`}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := storage.New(storage.WithLayout(testLayout), storage.WithInspector(tc.fs))
			plan, err := m.Plan(context.Background(), tc.vmi, tc.pod)
			if err == nil {
				t.Fatalf("Plan succeeded: %+v", plan)
			}
			if plan != nil {
				t.Errorf("a failed Plan returned a plan: %+v", plan)
			}
			errs := []error{err}
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				errs = j.Unwrap()
			}
			if len(errs) != len(tc.want) {
				t.Fatalf("got %d errors, want %d: %v", len(errs), len(tc.want), err)
			}
			for i, w := range tc.want {
				var ve *storage.VolumeError
				if !errors.As(errs[i], &ve) {
					t.Errorf("error %d is %T, not a *VolumeError: %v", i, errs[i], errs[i])
				}
				if !errors.Is(errs[i], w.sentinel) {
					t.Errorf("error %d %q does not match %v", i, errs[i], w.sentinel)
				}
				if !strings.Contains(errs[i].Error(), w.text) {
					t.Errorf("error %d\n  %s\ndoes not say\n  %s", i, errs[i], w.text)
				}
			}
		})
	}
}

type wantErr struct {
	sentinel error
	text     string
}

// The planner only reads: a context that has ended stops it.
func TestPlanContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m := storage.New(storage.WithLayout(testLayout), storage.WithInspector(fake.FS{}))
	if _, err := m.Plan(ctx, vmiWith(vol("root", pvc("c"))), storage.Pod{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Plan with an ended context: %v", err)
	}
}

// migratedFrom records in vmi's status that a volume migration copies
// volume from a claim of capacity.
func migratedFrom(vmi *virtv1.VirtualMachineInstance, volume, capacity string) *virtv1.VirtualMachineInstance {
	vmi.Status.MigratedVolumes = append(vmi.Status.MigratedVolumes, virtv1.StorageMigratedVolumeInfo{VolumeName: volume,
		SourcePVCInfo:      &virtv1.PersistentVolumeClaimInfo{ClaimName: "old-claim", Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(capacity)}},
		DestinationPVCInfo: &virtv1.PersistentVolumeClaimInfo{ClaimName: "new-claim"}})
	return vmi
}

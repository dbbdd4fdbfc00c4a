package virt_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/internal/testguest"
	"github.com/virtkit/virtkit/virt"
	"github.com/virtkit/virtkit/virt/domain"
	domainlibvirt "github.com/virtkit/virtkit/virt/domain/libvirt"
	"github.com/virtkit/virtkit/virt/spec"
	"github.com/virtkit/virtkit/virt/storage"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// A KubeVirt VMI spec boots for real: defaulted by virt/spec, its
// containerDisk prepared by virt/storage as an overlay on the test guest's
// BIOS disk, converted by virt/domain, started on a private libvirtd under
// software emulation; Stop shuts the guest down through ACPI and leaves no
// domain and no overlay behind.
func TestMachineBootsAVMIOnRealParts(t *testing.T) {
	d := testenv.Libvirtd(t)
	g := testenv.Guest(t)
	dir := testenv.Dir(t)
	layout := storage.Layout{
		EphemeralDir:      filepath.Join(dir, "ephemeral"),
		PrivateDir:        filepath.Join(dir, "private"),
		ContainerDisksDir: filepath.Join(dir, "container-disks"),
		HotplugDir:        filepath.Join(dir, "hotplug"),
		DevDir:            filepath.Join(dir, "dev"),
	}
	for _, p := range []string{layout.EphemeralDir, layout.PrivateDir, layout.ContainerDisksDir} {
		assert.NilError(t, os.MkdirAll(p, 0o755))
	}
	// The containerDisk image, as the pod's image volume would provide it.
	base, err := os.ReadFile(g.Disk)
	assert.NilError(t, err)
	assert.NilError(t, os.WriteFile(filepath.Join(layout.ContainerDisksDir, "disk_0.img"), base, 0o444))

	no := false
	vmi := &virtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "real", Namespace: "default", UID: "6a1e6b6c-0000-4000-8000-000000000002"},
		Spec: virtv1.VirtualMachineInstanceSpec{
			Domain: virtv1.DomainSpec{
				Resources: virtv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}},
				Devices: virtv1.Devices{
					Disks:                  []virtv1.Disk{{Name: "root"}},
					AutoattachPodInterface: &no,
				},
			},
			Volumes: []virtv1.Volume{{Name: "root", VolumeSource: virtv1.VolumeSource{ContainerDisk: &virtv1.ContainerDiskSource{Image: "localhost/test-guest:1"}}}},
		},
	}
	spec.DefaultVMI(vmi)
	assert.Assert(t, len(spec.ValidateVMI(vmi)) == 0, "%v", spec.ValidateVMI(vmi))

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	mgr, err := domainlibvirt.New(ctx, d.URI())
	assert.NilError(t, err)
	defer mgr.Close()
	console := filepath.Join(dir, "serial0.log")
	m, err := virt.New(vmi,
		virt.WithDomainManager(mgr),
		virt.WithStorage(storage.New(storage.WithLayout(layout)), storage.Pod{}),
		virt.WithHost(domain.Host{Emulation: true, Paths: domain.Paths{
			SerialConsole:    filepath.Join(dir, "serial0"),
			SerialConsoleLog: console,
			VNC:              filepath.Join(dir, "vnc"),
		}}),
	)
	assert.NilError(t, err)
	assert.NilError(t, m.Start(ctx))

	testenv.WaitConsole(t, ctx, console, regexp.MustCompile(`^`+testguest.ReadyMarker+`$`))
	status, err := m.Status(ctx)
	assert.NilError(t, err)
	assert.Equal(t, status.Phase, virtv1.Running)
	overlay := m.StoragePlan["root"].Path
	_, err = os.Stat(overlay)
	assert.NilError(t, err, "the containerDisk overlay exists while the guest runs")

	assert.NilError(t, m.Stop(ctx, time.Minute))
	testenv.WaitConsole(t, ctx, console, regexp.MustCompile(`^`+testguest.PowerOff+`$`))
	infos, err := mgr.List(ctx)
	assert.NilError(t, err)
	assert.Equal(t, len(infos), 0, "domains left: %v", infos)
	_, err = os.Stat(overlay)
	assert.Assert(t, os.IsNotExist(err), "the overlay is released: %v", err)
	after, err := os.ReadFile(filepath.Join(layout.ContainerDisksDir, "disk_0.img"))
	assert.NilError(t, err)
	assert.Assert(t, string(after) == string(base), "the containerDisk image was written")
}

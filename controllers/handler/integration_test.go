package handler_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/controllers/handler"
	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/internal/testenv/kubeenv"
	"github.com/virtkit/virtkit/internal/testguest"
	"github.com/virtkit/virtkit/virt/domain"
	domainlibvirt "github.com/virtkit/virtkit/virt/domain/libvirt"
	"github.com/virtkit/virtkit/virt/launcher"
	"github.com/virtkit/virtkit/virtapi/nodeapi"
)

// The handler on real parts: a real apiserver, real launcher pods (the
// virt-launcher binary with its private libvirtd, in network and mount
// namespaces of their own), the test guest under software emulation.
func TestHandlerOnRealParts(t *testing.T) {
	testenv.Integration(t)
	cp := kubeenv.ControlPlane(t)
	n := newRealNode(t, cp)
	n.start(t)

	t.Run("runs, pauses, stops", func(t *testing.T) { testRunPauseStop(t, n) })
	t.Run("killed QEMU fails the VMI", func(t *testing.T) { testKilledQEMU(t, n) })
	t.Run("restart adopts the guest", func(t *testing.T) { testRestart(t, n) })
}

func testRunPauseStop(t *testing.T, n *realNode) {
	ns := n.namespace(t, "lifecycle")
	vmi := guestVMI(ns, "vm1")
	key := client.ObjectKeyFromObject(vmi)
	// A VMI of another node is not touched.
	other := guestVMI(ns, "elsewhere")
	assert.NilError(t, n.CP.Client.Create(context.Background(), other))
	other.Status = virtv1.VirtualMachineInstanceStatus{Phase: virtv1.Scheduled, NodeName: "some-other-node"}
	assert.NilError(t, n.CP.Client.Status().Update(context.Background(), other))
	t.Cleanup(func() { n.release(t, client.ObjectKeyFromObject(other)) })

	pod := n.schedule(t, vmi)
	got := n.waitVMI(t, key, "Running", 2*time.Minute, phaseIs(virtv1.Running))

	// One status write took it from Scheduled to Running, with everything.
	// The test sees Running as soon as the apiserver has it; the write is
	// counted once it returns to the handler.
	assert.DeepEqual(t, n.Writes.WritesAtLeast(ns, 1, 5*time.Second), []string{"status-patch VirtualMachineInstance Running"})
	assert.Equal(t, len(got.Status.Interfaces), 1)
	iface := got.Status.Interfaces[0]
	assert.Equal(t, iface.Name, "default")
	assert.Equal(t, iface.IP, pod.PodIP.Addr().String())
	assert.Equal(t, iface.PodInterfaceName, "eth0")
	assert.Assert(t, iface.MAC != "")
	assert.Equal(t, got.Status.MigrationMethod, virtv1.BlockMigration)
	assert.Assert(t, got.Status.Machine != nil && got.Status.Machine.Type != "", "%+v", got.Status.Machine)
	assert.DeepEqual(t, got.Status.VolumeStatus, []virtv1.VolumeStatus{{Name: "root", Target: "vda"}})
	assert.Equal(t, conditionStatus(got, virtv1.VirtualMachineInstanceReady), corev1.ConditionTrue)

	// The guest boots and gets its address from the handler's DHCP server.
	waitConsole(t, pod, `^VIRTKIT-NET eth0 ip=10\.0\.2\.2/24 gw=10\.0\.2\.1 .*event=bound`)
	waitConsole(t, pod, `^`+testguest.ReadyMarker+`$`)
	assert.Equal(t, pod.packetSockets(t), 1, "one DHCP server in the pod")

	// The storage was prepared in the pod's file system: the overlay is
	// there for QEMU and nowhere on the node.
	entries, err := os.ReadDir(n.PodRoot)
	assert.NilError(t, err)
	assert.Check(t, is.Len(entries, 0), "the node's view of the pod folder")
	libvirtd, err := pidOf(t, pod)
	assert.NilError(t, err)
	overlay := filepath.Join("/proc", strconv.Itoa(libvirtd), "root", n.PodRoot, "eph", "disk-data", "root", "disk.qcow2")
	_, err = os.Stat(overlay)
	assert.NilError(t, err, "the overlay in the pod")
	_, err = os.Stat(filepath.Join(n.StateDir, string(vmi.UID)+".json"))
	assert.NilError(t, err, "the handler's state record")

	// Pause and unpause through the node API show in the status.
	ctx := context.Background()
	assert.NilError(t, n.R.Pause(ctx, ns, "vm1"))
	assert.Assert(t, errors.Is(n.R.Pause(ctx, ns, "vm1"), nodeapi.ErrConflict))
	n.waitVMI(t, key, "Paused", 30*time.Second, func(v *virtv1.VirtualMachineInstance) bool {
		return conditionStatus(v, virtv1.VirtualMachineInstancePaused) == corev1.ConditionTrue &&
			conditionStatus(v, virtv1.VirtualMachineInstanceReady) == corev1.ConditionFalse
	})
	beat := heartbeat(t, pod)
	time.Sleep(2 * time.Second)
	assert.Equal(t, heartbeat(t, pod), beat, "a paused guest does not beat")
	assert.NilError(t, n.R.Unpause(ctx, ns, "vm1"))
	n.waitVMI(t, key, "unpaused", 30*time.Second, func(v *virtv1.VirtualMachineInstance) bool {
		return conditionStatus(v, virtv1.VirtualMachineInstancePaused) == "" &&
			conditionStatus(v, virtv1.VirtualMachineInstanceReady) == corev1.ConditionTrue
	})

	// The console through the node API streams the guest's serial port.
	con, err := n.R.Console(ctx, ns, "vm1")
	assert.NilError(t, err)
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	line, err := domain.WaitConsoleLine(cctx, con, regexp.MustCompile(`^`+testguest.HeartbeatLine+` \d+`))
	cancel()
	assert.NilError(t, err)
	t.Logf("console: %s", line)
	assert.NilError(t, con.Close())
	// So does VNC: the guest's RFB server greets.
	vnc, err := n.R.VNC(ctx, ns, "vm1")
	assert.NilError(t, err)
	greeting := make([]byte, 12)
	_ = vnc.(interface{ SetDeadline(time.Time) error }).SetDeadline(time.Now().Add(10 * time.Second))
	_, err = vnc.Read(greeting)
	assert.NilError(t, err)
	assert.Assert(t, regexp.MustCompile(`^RFB \d{3}\.\d{3}\n$`).Match(greeting), "%q", greeting)
	assert.NilError(t, vnc.Close())

	testHotplug(t, n, pod, key, libvirtd)

	// Deleting the VMI shuts the guest down through ACPI; it ends Succeeded
	// and nothing the handler set up is left.
	got = n.waitVMI(t, key, "Running", time.Second, phaseIs(virtv1.Running))
	assert.NilError(t, n.CP.Client.Delete(ctx, got))
	waitConsole(t, pod, `^`+testguest.PowerOff+`$`)
	n.waitVMI(t, key, "Succeeded", time.Minute, phaseIs(virtv1.Succeeded))
	// The write that set Succeeded is counted once it returns to the handler.
	var writes []string
	testenv.Eventually(testenv.Within(t, 5*time.Second), t, "the Succeeded write counted", func() (bool, string) {
		writes = n.Writes.Writes(ns)
		return len(writes) > 0 && writes[len(writes)-1] == "status-patch VirtualMachineInstance Succeeded", strings.Join(writes, ", ")
	})
	for _, w := range writes {
		assert.Assert(t, strings.HasPrefix(w, "status-patch VirtualMachineInstance "), "only status writes: %v", writes)
	}
	res := pod.exited(t)
	assert.Equal(t, res.Code, launcher.ExitOK, res.Reason)
	assertNothingLeft(t, n, pod, vmi)
	otherNow := &virtv1.VirtualMachineInstance{}
	assert.NilError(t, n.CP.Client.Get(ctx, client.ObjectKeyFromObject(other), otherNow))
	assert.Equal(t, otherNow.Status.Phase, virtv1.Scheduled, "a VMI of another node")
}

// testHotplug adds a hotpluggable volume to the running VMI's spec, as
// virt-api's addvolume does, with its image in the pod's hotplug folder (as
// KubeVirt's attachment pod would bring it): the handler attaches it on SCSI
// and reports it Ready; removing it from the spec detaches it.
func testHotplug(t *testing.T, n *realNode, pod *testPod, key client.ObjectKey, libvirtd int) {
	ctx := context.Background()
	hp := filepath.Join("/proc", strconv.Itoa(libvirtd), "root", n.PodRoot, "hp")
	assert.NilError(t, os.MkdirAll(hp, 0o755))
	img, err := os.Create(filepath.Join(hp, "data.img"))
	assert.NilError(t, err)
	assert.NilError(t, img.Truncate(16<<20))
	assert.NilError(t, img.Close())

	vmi := &virtv1.VirtualMachineInstance{}
	assert.NilError(t, n.CP.Client.Get(ctx, key, vmi))
	vmi.Spec.Volumes = append(vmi.Spec.Volumes, virtv1.Volume{Name: "data", VolumeSource: virtv1.VolumeSource{
		PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{Hotpluggable: true,
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-claim"}}}})
	vmi.Spec.Domain.Devices.Disks = append(vmi.Spec.Domain.Devices.Disks, virtv1.Disk{Name: "data",
		DiskDevice: virtv1.DiskDevice{Disk: &virtv1.DiskTarget{Bus: virtv1.DiskBusSCSI}}})
	assert.NilError(t, n.CP.Client.Update(ctx, vmi))
	got := n.waitVMI(t, key, "the volume Ready", 30*time.Second, func(v *virtv1.VirtualMachineInstance) bool {
		for _, vs := range v.Status.VolumeStatus {
			if vs.Name == "data" && vs.Phase == virtv1.VolumeReady {
				return true
			}
		}
		return false
	})
	assert.Equal(t, got.Status.VolumeStatus[1].Target, "sda")
	m, err := domainlibvirt.New(ctx, pod.libvirtURI(t))
	assert.NilError(t, err)
	defer m.Close()
	doc, err := m.XML(ctx, key.Namespace+"_"+key.Name, domain.XMLOptions{})
	assert.NilError(t, err)
	assert.Equal(t, handler.RunningDomainOf(doc).Targets["data"], "sda")

	got.Spec.Volumes = got.Spec.Volumes[:1]
	got.Spec.Domain.Devices.Disks = got.Spec.Domain.Devices.Disks[:1]
	assert.NilError(t, n.CP.Client.Update(ctx, got))
	n.waitVMI(t, key, "the volume gone", 30*time.Second, func(v *virtv1.VirtualMachineInstance) bool {
		return len(v.Status.VolumeStatus) == 1
	})
	testenv.EventuallyEvery(testenv.Within(t, 30*time.Second), t, 200*time.Millisecond, "the hotplugged disk detached", func() (bool, string) {
		doc, err := m.XML(ctx, key.Namespace+"_"+key.Name, domain.XMLOptions{})
		assert.NilError(t, err)
		_, attached := handler.RunningDomainOf(doc).Targets["data"]
		return !attached, "still attached"
	})
}

func testKilledQEMU(t *testing.T, n *realNode) {
	ns := n.namespace(t, "killed")
	vmi := guestVMI(ns, "vm1")
	key := client.ObjectKeyFromObject(vmi)
	pod := n.schedule(t, vmi)
	n.waitVMI(t, key, "Running", 2*time.Minute, phaseIs(virtv1.Running))
	waitConsole(t, pod, `^`+testguest.ReadyMarker+`$`)
	assert.NilError(t, syscall.Kill(pod.qemuPID(t, ns+"_vm1"), syscall.SIGKILL))
	got := n.waitVMI(t, key, "Failed", time.Minute, phaseIs(virtv1.Failed))
	assert.Equal(t, got.Status.Reason, "GuestCrashed")
	ready := condition(got, virtv1.VirtualMachineInstanceReady)
	assert.Assert(t, ready != nil && ready.Status == corev1.ConditionFalse && ready.Reason == "GuestCrashed" && ready.Message != "", "%+v", ready)
	res := pod.exited(t)
	assert.Equal(t, res.Code, launcher.ExitGuestCrashed, res.Reason)
	assertNothingLeft(t, n, pod, vmi)
}

func testRestart(t *testing.T, n *realNode) {
	ns := n.namespace(t, "restart")
	vmi := guestVMI(ns, "vm1")
	key := client.ObjectKeyFromObject(vmi)
	pod := n.schedule(t, vmi)
	n.waitVMI(t, key, "Running", 2*time.Minute, phaseIs(virtv1.Running))
	waitConsole(t, pod, `^`+testguest.ReadyMarker+`$`)
	// Everything there is to report is reported: the guest's agent too.
	n.waitVMI(t, key, "AgentConnected", time.Minute, func(v *virtv1.VirtualMachineInstance) bool {
		c := condition(v, virtv1.VirtualMachineInstanceAgentConnected)
		return c != nil && c.Status == corev1.ConditionTrue
	})
	qemu := pod.qemuPID(t, ns+"_vm1")

	// The handler stops: its DHCP server goes with it, the guest runs on.
	n.stop()
	assert.Equal(t, pod.packetSockets(t), 0, "the stopped handler's DHCP server")
	beat := heartbeat(t, pod)
	time.Sleep(2 * time.Second)
	assert.Assert(t, heartbeat(t, pod) > beat, "the guest keeps running without a handler")

	// A new handler adopts it: same QEMU, heartbeat going on, DHCP served
	// again, no status write.
	n.start(t)
	testenv.Eventually(testenv.Within(t, 30*time.Second), t, "the new handler serving DHCP in the pod", func() (bool, string) {
		socks := pod.packetSockets(t)
		return socks == 1, fmt.Sprintf("%d packet sockets", socks)
	})
	time.Sleep(2 * time.Second)
	assert.Check(t, is.Len(n.Writes.Writes(ns), 0), "writes after the restart: %v", n.Writes.Writes(ns))
	assert.Equal(t, pod.qemuPID(t, ns+"_vm1"), qemu, "the guest's QEMU changed")
	beat = heartbeat(t, pod)
	time.Sleep(2 * time.Second)
	assert.Assert(t, heartbeat(t, pod) > beat, "the guest keeps running after the restart")

	// The adopted guest is the new handler's to drive and to stop.
	assert.NilError(t, n.R.Pause(context.Background(), ns, "vm1"))
	n.waitVMI(t, key, "Paused", 30*time.Second, func(v *virtv1.VirtualMachineInstance) bool {
		return conditionStatus(v, virtv1.VirtualMachineInstancePaused) == corev1.ConditionTrue
	})
	assert.NilError(t, n.R.Unpause(context.Background(), ns, "vm1"))
	got := n.waitVMI(t, key, "unpaused", 30*time.Second, func(v *virtv1.VirtualMachineInstance) bool {
		return conditionStatus(v, virtv1.VirtualMachineInstancePaused) == ""
	})
	assert.NilError(t, n.CP.Client.Delete(context.Background(), got))
	n.waitVMI(t, key, "Succeeded", time.Minute, phaseIs(virtv1.Succeeded))
	pod.exited(t)
	assertNothingLeft(t, n, pod, vmi)
}

// assertNothingLeft checks that the handler left nothing of an ended VMI:
// no state record, no DHCP server, no link or nftables table it made in the
// pod's namespace, no process of the pod.
func assertNothingLeft(t *testing.T, n *realNode, pod *testPod, vmi *virtv1.VirtualMachineInstance) {
	t.Helper()
	_, err := os.Stat(filepath.Join(n.StateDir, string(vmi.UID)+".json"))
	assert.Check(t, os.IsNotExist(err), "state record: %v", err)
	assert.Check(t, is.Equal(pod.packetSockets(t), 0), "DHCP servers left in the pod")
	assert.Check(t, is.DeepEqual(pod.links(t), []string{"eth0"}), "links in the pod")
	assert.Check(t, is.Len(pod.nftTables(t), 0), "nftables tables in the pod: %v", pod.nftTables(t))
	pod.stop(t)
}

// pidOf is the pod's libvirtd, found as the handler finds it.
func pidOf(t *testing.T, p *testPod) (int, error) {
	t.Helper()
	return handlerPeerPID(p.libvirtSocket(t))
}

func conditionStatus(v *virtv1.VirtualMachineInstance, typ virtv1.VirtualMachineInstanceConditionType) corev1.ConditionStatus {
	if c := condition(v, typ); c != nil {
		return c.Status
	}
	return ""
}

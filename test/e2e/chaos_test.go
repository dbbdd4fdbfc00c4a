package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/internal/linuxproc"
	"github.com/virtkit/virtkit/internal/localcluster"
	"github.com/virtkit/virtkit/internal/testguest"
	"github.com/virtkit/virtkit/local/cluster"
	"github.com/virtkit/virtkit/virt/launcher/contract"
)

// The chaos suite. virt-local runs split (virt-api, virt-exportproxy,
// virt-controller and each node's handler as processes of their own,
// restarted when they die, as a kubelet restarts a container). Before the
// runs, a claim's export serves through the split daemons
// (exportInSplitMode). Each run boots a VM with a data disk
// on a PVC, whose guest writes a counter to it at each boot, then SIGKILLs
// one victim (a daemon, or the libvirtd or QEMU of the VM's launcher) at
// one step of the VM's life, and checks that after the kill:
//   - the VM reaches what was asked (running, stopped, gone, migrated or
//     still running where it was);
//   - once the VM is deleted nothing is left: no pod, no process of its
//     launchers (launcher, libvirtd with its domain, QEMU), no launcher
//     folder, no pod folder or network namespace on a node, no mount, no
//     temporary image file;
//   - the counter on the PVC's disk image reads back at least what the
//     guest wrote before the kill.
//
// `make chaos` runs every victim at every step (VIRTKIT_CHAOS=full);
// `make test` runs one step per victim. The test ends with one line:
// chaos_runs=N survived=N orphans=N data_lost=N.
//
// Volume hotplug is not among the steps: virt-api refuses hotplug requests
// until hotplug works end to end, so there is nothing to interrupt.

// chaosStep is a moment of a VM's life to kill a victim at.
type chaosStep string

const (
	stepStart   chaosStep = "start"
	stepStop    chaosStep = "stop"
	stepDelete  chaosStep = "delete"
	stepMigrate chaosStep = "migrate"
)

// chaosVictim is what gets SIGKILLed.
type chaosVictim string

const (
	victimAPI        chaosVictim = "virt-api"
	victimController chaosVictim = "virt-controller"
	victimHandler    chaosVictim = "virt-handler"
	// victimTargetHandler is the handler of a migration's target node
	// (victimHandler, at a migration, is the source's).
	victimTargetHandler chaosVictim = "target-virt-handler"
	victimLibvirtd      chaosVictim = "libvirtd"
	victimQEMU          chaosVictim = "qemu"
)

type chaosRun struct {
	victim chaosVictim
	step   chaosStep
}

func (r chaosRun) String() string { return string(r.victim) + "@" + string(r.step) }

// chaosPlan is every victim at every step with full, else one step each,
// chosen so that each step is covered once and the daemons whose death
// matters most meet the steps where they act.
func chaosPlan(full bool) []chaosRun {
	victims := []chaosVictim{victimAPI, victimController, victimHandler, victimLibvirtd, victimQEMU}
	steps := []chaosStep{stepStart, stepStop, stepDelete, stepMigrate}
	if full {
		var plan []chaosRun
		for _, v := range victims {
			for _, s := range steps {
				plan = append(plan, chaosRun{v, s})
			}
		}
		return append(plan, chaosRun{victimTargetHandler, stepMigrate})
	}
	return []chaosRun{
		{victimController, stepStart},
		{victimHandler, stepMigrate},
		{victimTargetHandler, stepMigrate},
		{victimAPI, stepStop},
		{victimLibvirtd, stepDelete},
		{victimQEMU, stepStart},
	}
}

// chaosTally counts what the runs found.
type chaosTally struct {
	mu                            sync.Mutex
	runs, survived, orphans, lost int
}

func (c *chaosTally) add(survived bool, orphans int, lost bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.runs++
	if survived {
		c.survived++
	}
	c.orphans += orphans
	if lost {
		c.lost++
	}
}

func (c *chaosTally) String() string {
	return fmt.Sprintf("chaos_runs=%d survived=%d orphans=%d data_lost=%d", c.runs, c.survived, c.orphans, c.lost)
}

func TestChaos(t *testing.T) {
	a, b := nodeName("ca"), nodeName("cb")
	c := localcluster.ForTest(t, localcluster.Options{Nodes: []string{a, b}, Split: true})
	w := worldOf(t, c)
	h := &chaos{w: w, c: c}
	plan := chaosPlan(os.Getenv("VIRTKIT_CHAOS") == "full")
	if only := os.Getenv("VIRTKIT_CHAOS_RUN"); only != "" { // one run, VICTIM@STEP
		i := slices.IndexFunc(chaosPlan(true), func(r chaosRun) bool { return r.String() == only })
		if i < 0 {
			t.Fatalf("VIRTKIT_CHAOS_RUN=%q: not a run of the plan, %v", only, chaosPlan(true))
		}
		plan = []chaosRun{chaosPlan(true)[i]}
	}
	// Before any chaos: the split daemons serve VM exports.
	t.Run("export", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		exportInSplitMode(ctx, t, w)
	})
	tally := &chaosTally{}
	for i, run := range plan {
		// Filled even when the run fails half-way.
		var res chaosResult
		ok := t.Run(run.String(), func(t *testing.T) { h.run(t, i, run, &res) })
		tally.add(ok, res.orphans, res.lost)
	}
	t.Log(tally)
	fmt.Println(tally)
	if tally.survived != tally.runs {
		t.Errorf("%s: a run did not survive", tally)
	}
}

// chaos is the suite's cluster.
type chaos struct {
	w *world
	c *localcluster.Cluster
}

// chaosRunTimeout bounds one run: a boot, the step, the recovery (a
// restarted virt-controller waits for the dead one's lease, 15 s), a
// possible second boot and the clean-up.
const chaosRunTimeout = 5 * time.Minute

// chaosResult is what a run found: how many orphans, and whether the
// disk's counter went back.
type chaosResult struct {
	orphans int
	lost    bool
}

// run performs one run in a namespace of its own and records in res what
// it found, also when it fails half-way.
func (h *chaos) run(t *testing.T, index int, run chaosRun, res *chaosResult) {
	ctx, cancel := context.WithTimeout(context.Background(), chaosRunTimeout)
	defer cancel()
	w := h.w
	ns := fmt.Sprintf("chaos-%d", index)
	must(t, w.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	seen := h.watchUIDs(ns)
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			// Shared, so that the VM is live-migratable.
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")}},
		},
	}
	must(t, w.c.Create(ctx, pvc))
	vm := w.readVM(t, "../../examples/manifests/vm-tiny.yaml")
	vm.Namespace, vm.Name = ns, "victim"
	spec := &vm.Spec.Template.Spec
	spec.Domain.Devices.Disks = append(spec.Domain.Devices.Disks, virtv1.Disk{Name: "data",
		DiskDevice: virtv1.DiskDevice{Disk: &virtv1.DiskTarget{Bus: virtv1.DiskBusVirtio}}})
	spec.Volumes = append(spec.Volumes, virtv1.Volume{Name: "data", VolumeSource: virtv1.VolumeSource{
		PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc.Name}}}})
	must(t, w.c.Create(ctx, vm))

	// Whatever happens below, the VM is deleted, what it leaves is counted
	// and the counter read back.
	var disk string
	wrote := 0
	defer func() {
		res.orphans = h.cleanUp(t, vm, seen)
		if disk != "" {
			n, err := diskCounter(disk)
			if err != nil || n < wrote {
				res.lost = true
				t.Errorf("DATA LOST: the PVC's disk image counts %d (%v) after the guest wrote %d", n, err, wrote)
			}
		}
		if err := w.c.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Errorf("deleting namespace %s: %v", ns, err)
		}
	}()

	first := w.waitRunning(ctx, t, vm)
	waitFile(ctx, t, w.serialLog(ctx, t, first), "VIRTKIT-DISK vdc previous=none wrote=1 readback=ok")
	must(t, w.c.Get(ctx, client.ObjectKeyFromObject(pvc), pvc))
	disk = w.claimDisk(ctx, t, pvc)
	wrote = 1

	switch run.step {
	case stepStart:
		w.virtctl(ctx, t, "stop", vm.Name, "-n", ns)
		w.waitNoVMI(ctx, t, vm)
		w.virtctl(ctx, t, "start", vm.Name, "-n", ns)
		h.killWhenReady(ctx, t, run.victim, vm, nil)
		// The guest boots again (once more if QEMU died: a VMI of its
		// own) and counts on.
		v := h.waitVMI(ctx, t, vm, "Running with the guest's disk line", func(v *virtv1.VirtualMachineInstance) bool {
			folder, _ := w.launcherFolderNow(ctx, v, "")
			if folder == "" {
				return false
			}
			b, _ := os.ReadFile(filepath.Join(folder, contract.SerialLog))
			return v.Status.Phase == virtv1.Running && bytes.Contains(b, []byte("readback=ok"))
		})
		t.Logf("VMI %s runs on %s", v.UID, v.Status.NodeName)
		wrote = 2
	case stepStop:
		h.killWhenReady(ctx, t, run.victim, vm, func() { w.virtctl(ctx, t, "stop", vm.Name, "-n", ns) })
		w.waitNoVMI(ctx, t, vm)
		eventually(ctx, t, "VM "+vm.Name+" Stopped", func() (bool, string) {
			v := &virtv1.VirtualMachine{}
			must(t, w.c.Get(ctx, client.ObjectKeyFromObject(vm), v))
			return v.Status.PrintableStatus == virtv1.VirtualMachineStatusStopped, string(v.Status.PrintableStatus)
		})
	case stepDelete:
		h.killWhenReady(ctx, t, run.victim, vm, func() { must(t, w.c.Delete(ctx, vm)) })
		eventually(ctx, t, "VM "+vm.Name+" gone", func() (bool, string) {
			err := w.c.Get(ctx, client.ObjectKeyFromObject(vm), &virtv1.VirtualMachine{})
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
	case stepMigrate:
		h.killWhenReady(ctx, t, run.victim, vm, func() { w.virtctl(ctx, t, "migrate", vm.Name, "-n", ns) })
		// The migration ends, either way, and the VM runs: where it was,
		// on the other node, or booted again if its QEMU died.
		var list virtv1.VirtualMachineInstanceMigrationList
		eventually(ctx, t, "the migration final", func() (bool, string) {
			must(t, w.c.List(ctx, &list, client.InNamespace(ns)))
			for _, m := range list.Items {
				if !m.IsFinal() {
					return false, fmt.Sprintf("%s: %s", m.Name, m.Status.Phase)
				}
			}
			return len(list.Items) > 0, fmt.Sprintf("%d migrations", len(list.Items))
		})
		v := w.waitRunning(ctx, t, vm)
		m := list.Items[0]
		why := ""
		if ms := m.Status.MigrationState; ms != nil {
			why = ms.FailureReason
		}
		t.Logf("the migration %s %s; the VMI %s runs on %s (it ran on %s)", m.Status.Phase, why, v.UID, v.Status.NodeName, first.Status.NodeName)
		// virt-api takes no part in a migration once it is created.
		if run.victim == victimAPI && m.Status.Phase != virtv1.MigrationSucceeded {
			t.Errorf("the migration %s after virt-api's death: %s", m.Status.Phase, why)
		}
	}
}

// killWhenReady runs act (if any), waits until the victim has something
// to kill for vm (its VMI's node for a handler, the launcher's processes
// for libvirtd and QEMU, right away for virt-api and virt-controller) and
// SIGKILLs it. For a migration it waits until the migration runs and
// kills the source's, or the target node's handler for
// victimTargetHandler.
func (h *chaos) killWhenReady(ctx context.Context, t *testing.T, victim chaosVictim, vm *virtv1.VirtualMachine, act func()) {
	t.Helper()
	w := h.w
	var before *virtv1.VirtualMachineInstance
	if v := (&virtv1.VirtualMachineInstance{}); w.c.Get(ctx, client.ObjectKeyFromObject(vm), v) == nil {
		before = v
	}
	if act != nil {
		act()
	}
	migrating := false
	if before != nil {
		var list virtv1.VirtualMachineInstanceMigrationList
		must(t, w.c.List(ctx, &list, client.InNamespace(vm.Namespace)))
		migrating = len(list.Items) > 0
	}
	if migrating {
		// Past the target's preparation: the handlers and both launchers
		// take part now.
		eventually(ctx, t, "the migration running", func() (bool, string) {
			var list virtv1.VirtualMachineInstanceMigrationList
			must(t, w.c.List(ctx, &list, client.InNamespace(vm.Namespace)))
			if len(list.Items) == 0 {
				return false, "no migration"
			}
			switch p := list.Items[0].Status.Phase; p { // a run makes one
			case virtv1.MigrationTargetReady, virtv1.MigrationRunning, virtv1.MigrationSucceeded, virtv1.MigrationFailed:
				return true, ""
			default:
				return false, string(p)
			}
		})
	}
	switch victim {
	case victimAPI, victimController:
		h.killDaemon(t, string(victim))
	case victimHandler:
		node := ""
		if before != nil {
			node = before.Status.NodeName
		}
		if node == "" { // starting: the node the new VMI is scheduled to
			v := h.waitVMI(ctx, t, vm, "scheduled to a node", func(v *virtv1.VirtualMachineInstance) bool {
				return v.Status.NodeName != "" && v.Status.Phase != virtv1.Pending && v.Status.Phase != ""
			})
			node = v.Status.NodeName
		}
		h.killDaemon(t, cluster.HandlerDaemon(node))
	case victimTargetHandler:
		if !migrating {
			t.Fatalf("%s: only at a migration", victim)
		}
		v := h.waitVMI(ctx, t, vm, "migrating to a node", func(v *virtv1.VirtualMachineInstance) bool {
			return v.Status.MigrationState != nil && v.Status.MigrationState.TargetNode != ""
		})
		h.killDaemon(t, cluster.HandlerDaemon(v.Status.MigrationState.TargetNode))
	case victimLibvirtd, victimQEMU:
		var uid types.UID
		if before != nil {
			uid = before.UID
		} else {
			v := h.waitVMI(ctx, t, vm, "created", func(v *virtv1.VirtualMachineInstance) bool { return v.UID != "" })
			uid = v.UID
		}
		var victims []linuxproc.Process
		eventually(ctx, t, string(victim)+" of VMI "+string(uid)+" running", func() (bool, string) {
			procs, err := launcherProcesses(string(uid))
			if err != nil {
				return false, err.Error()
			}
			victims = victims[:0]
			for _, p := range procs {
				if isVictim(victim, p) {
					victims = append(victims, p)
				}
			}
			return len(victims) > 0, fmt.Sprint(procs)
		})
		for _, p := range victims {
			t.Logf("SIGKILL %s", p)
			if err := syscall.Kill(p.PID, syscall.SIGKILL); err != nil {
				t.Fatalf("SIGKILL %s: %v", p, err)
			}
		}
	}
}

// waitVMI waits until vm's VMI exists and ok holds for it.
func (h *chaos) waitVMI(ctx context.Context, t *testing.T, vm *virtv1.VirtualMachine, what string, ok func(*virtv1.VirtualMachineInstance) bool) *virtv1.VirtualMachineInstance {
	t.Helper()
	v := &virtv1.VirtualMachineInstance{}
	eventually(ctx, t, "VMI "+vm.Name+" "+what, func() (bool, string) {
		if err := h.w.c.Get(ctx, client.ObjectKeyFromObject(vm), v); err != nil {
			return false, err.Error()
		}
		return ok(v), fmt.Sprintf("phase %s node %q", v.Status.Phase, v.Status.NodeName)
	})
	return v
}

func isVictim(victim chaosVictim, p linuxproc.Process) bool {
	switch victim {
	case victimLibvirtd:
		return p.Comm == "libvirtd" || p.Comm == "virtqemud"
	case victimQEMU:
		// The guest's, not libvirt's capability probe (-machine none).
		return strings.HasPrefix(p.Comm, "qemu-system") && strings.Contains(p.Cmdline, "-name guest=")
	}
	return false
}

// killDaemon SIGKILLs the daemon process name of the split cluster.
func (h *chaos) killDaemon(t *testing.T, name string) {
	t.Helper()
	d, ok := h.c.Daemons()[name]
	if !ok || !d.Running {
		t.Fatalf("daemon %s: %+v, not running (daemons: %v)", name, d, h.c.Daemons())
	}
	t.Logf("SIGKILL %s (pid %d)", name, d.PID)
	if err := syscall.Kill(d.PID, syscall.SIGKILL); err != nil {
		t.Fatalf("SIGKILL %s: %v", name, err)
	}
}

// launcherProcesses are the processes of the launcher folder uid (a
// VMI's or a migration's): whose command line or mounts name it.
func launcherProcesses(uid string) ([]linuxproc.Process, error) {
	return linuxproc.List(func(p linuxproc.Process, dir string) bool {
		if strings.Contains(p.Cmdline, uid) {
			return true
		}
		mounts, err := linuxproc.ReadMounts(filepath.Join(dir, "mountinfo"))
		if err != nil {
			return false
		}
		for _, m := range mounts {
			if strings.Contains(m.Root, uid) || strings.Contains(m.MountPoint, uid) {
				return true
			}
		}
		return false
	})
}

// uidSet collects the VMI, migration and pod UIDs of a namespace while a
// run goes on: each names launcher processes and mounts to look for after.
type uidSet struct {
	mu   sync.Mutex
	uids map[types.UID]bool
	stop context.CancelFunc
	done chan struct{}
}

func (h *chaos) watchUIDs(ns string) *uidSet {
	ctx, cancel := context.WithCancel(context.Background())
	s := &uidSet{uids: map[types.UID]bool{}, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			var vmis virtv1.VirtualMachineInstanceList
			var migs virtv1.VirtualMachineInstanceMigrationList
			err1 := h.w.c.List(ctx, &vmis, client.InNamespace(ns))
			err2 := h.w.c.List(ctx, &migs, client.InNamespace(ns))
			var pods corev1.PodList
			err3 := h.w.c.List(ctx, &pods, client.InNamespace(ns))
			s.mu.Lock()
			if err3 == nil {
				for _, p := range pods.Items {
					s.uids[p.UID] = true // names the mounts of its folders
				}
			}
			if err1 == nil {
				for _, v := range vmis.Items {
					s.uids[v.UID] = true
				}
			}
			if err2 == nil {
				for _, m := range migs.Items {
					s.uids[m.UID] = true
				}
			}
			s.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return s
}

// list stops the watch and returns the UIDs seen.
func (s *uidSet) list() []types.UID {
	s.stop()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []types.UID
	for u := range s.uids {
		out = append(out, u)
	}
	slices.Sort(out)
	return out
}

// chaosCleanTimeout bounds the wait for everything of a deleted VM to go.
const chaosCleanTimeout = 2 * time.Minute

// cleanUp deletes vm if it is still there, waits until its pods and VMIs
// are gone, then counts what is left of it on the host: processes and
// launcher folders of its VMIs and migrations, pod folders of the nodes,
// mounts below the nodes' folders, temporary image files in the volumes.
// Each is reported and counted as an orphan.
func (h *chaos) cleanUp(t *testing.T, vm *virtv1.VirtualMachine, seen *uidSet) int {
	w := h.w
	ctx, cancel := context.WithTimeout(context.Background(), chaosCleanTimeout)
	defer cancel()
	if err := w.c.Delete(ctx, vm); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting VM %s: %v", vm.Name, err)
	}
	var left []string
	gone := poll(ctx, func() bool {
		left = left[:0]
		var pods corev1.PodList
		var vmis virtv1.VirtualMachineInstanceList
		if err := w.c.List(ctx, &pods, client.InNamespace(vm.Namespace)); err != nil {
			left = append(left, err.Error())
		}
		if err := w.c.List(ctx, &vmis, client.InNamespace(vm.Namespace)); err != nil {
			left = append(left, err.Error())
		}
		for _, p := range pods.Items {
			left = append(left, "pod "+p.Name+" "+string(p.Status.Phase))
		}
		for _, v := range vmis.Items {
			left = append(left, "VMI "+v.Name+" "+string(v.Status.Phase))
		}
		return len(left) == 0
	})
	uids := seen.list()
	// What the API forgot is counted as well as what the host kept: a
	// launcher folder goes after its pod, give it the same time.
	if gone {
		poll(ctx, func() bool { return len(h.hostLeftovers(uids)) == 0 })
	}
	orphans := append(left, h.hostLeftovers(uids)...)
	for _, o := range orphans {
		t.Errorf("ORPHAN after deleting %s/%s: %s", vm.Namespace, vm.Name, o)
	}
	return len(orphans)
}

// hostLeftovers lists what is left on the host of the launchers of uids
// and of the cluster's pods, once no pod should exist.
func (h *chaos) hostLeftovers(uids []types.UID) []string {
	var out []string
	for _, u := range uids {
		procs, err := launcherProcesses(string(u))
		if err != nil {
			out = append(out, err.Error())
		}
		for _, p := range procs {
			out = append(out, "process "+p.String())
		}
	}
	// A launcher's folder is its pod's emptyDir, in the pod's folder.
	nodes := filepath.Join(h.w.data, "nodes")
	podDirs, _ := filepath.Glob(filepath.Join(nodes, "*", "pods", "*"))
	for _, d := range podDirs {
		out = append(out, "pod folder "+d)
	}
	if mounts, err := linuxproc.ReadMounts("/proc/self/mountinfo"); err == nil {
		for _, m := range mounts {
			if strings.HasPrefix(m.MountPoint, nodes+"/") && strings.Contains(m.MountPoint, "/pods/") {
				out = append(out, "mount "+m.MountPoint)
			}
		}
	} else {
		out = append(out, err.Error())
	}
	_ = filepath.WalkDir(filepath.Join(h.w.data, "csi", "volumes"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".vkt-") {
			out = append(out, "temporary file "+path)
		}
		return nil
	})
	return out
}

// poll calls cond every 250 ms until it holds (true) or ctx ends (false).
func poll(ctx context.Context, cond func() bool) bool {
	for {
		if cond() {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// diskCounter reads the test guest's counter from the start of a data
// disk's image: "VIRTKIT-DATA n=N".
func diskCounter(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	head := make([]byte, 64)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return 0, err
	}
	m := diskCounterRE.FindSubmatch(bytes.TrimRight(head[:n], "\x00"))
	if m == nil {
		return 0, fmt.Errorf("%s starts with %q, not the guest's counter", path, head[:n])
	}
	return strconv.Atoi(string(m[1]))
}

var diskCounterRE = regexp.MustCompile(`^` + testguest.DataMarker + ` n=([0-9]+)\n`)

// Command snapshots is `make bench-snapshot`: a VM snapshot and a restore
// through virtkit on virt-local's CSI storage, next to their floor, a
// plain `cp --reflink=auto --sparse=always` of the same disk file, in the
// same run and on the same file system.
//
// For each disk size (-sizes, MiB; 1024 and 4096 by default) it makes a
// claim of that size on a fresh virt-local, fills its disk.img with
// pseudo-random data (every byte written: no hole to skip, the worst
// case for a sparse copy) and makes a stopped VM with it as its data
// disk. Then, after one warm-up of each side, -runs times, alternating
// which side goes first:
//
//   - snapshot: from the VirtualMachineSnapshot's creation to its
//     readyToUse (the VM locked, the content, a VolumeSnapshot, the CSI
//     driver's copy, the statuses back), polled every 20 ms;
//   - restore: from a VirtualMachineRestore's creation (to a new VM) to
//     its complete (a claim made from the VolumeSnapshot, the driver's
//     copy, the claim bound, the new VM written);
//   - cp: the same disk.img copied by cp in the same folder tree, then
//     that copy copied again at once: the driver's two copies (the
//     snapshot's of the volume, the restore's of the snapshot), each the
//     floor of its side. A copy of a file written a moment before is
//     often slower than one of a file on disk (0.2 to 2.1 s against 0.25
//     s for 1 GiB with plain cp here), so the restore is compared with
//     the second.
//
// Neither side syncs its copy to disk, and each starts with the page
// cache clean (a sync before it, off the clock). After each run the copies are
// deleted and the benchmark waits until the driver's folders are back to
// the one volume, so that a deletion never overlaps a measurement.
//
// Then, the same number of runs: curl downloading the disk raw through a
// VirtualMachineExport of the claim (its external link: the export proxy,
// then the export server pod), next to curl downloading the same
// file from a plain HTTPS file server, both to /dev/null with the file in
// the page cache (exportDownloads).
//
// Each side reports its median, smallest and largest run, and the last
// line is machine-readable:
//
//	snapshot_ratio=<n> restore_ratio=<n> export_ratio=<n> clone_ratio=<n>
//
// where the first two are virtkit's median time over cp's, the larger of
// the sizes' (the goal is 1.5 at most), and export_ratio is the export's
// download throughput over plain curl's (curl's median time over the
// export's), the smaller of the sizes' (the goal is 0.8 at least).
//
// Last, the same number of runs: a DataVolume cloning the claim into
// virt-local's default class, whose StorageProfile says csi-clone (the
// driver copies the volume), next to one cloning it into a class of the
// same driver whose profile says copy (an importer pod copies disk.img, as
// CDI's host-assisted clone), each from creation to Succeeded (clones).
// clone_ratio is the CSI clone's median over the first cp's, the larger
// of the sizes'.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	volumesnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	virtv1 "kubevirt.io/api/core/v1"
	vmsnapshotv1 "kubevirt.io/api/snapshot/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/hack/bench/internal/benchkit"
	"github.com/virtkit/virtkit/internal/localcluster"
	"github.com/virtkit/virtkit/local/cluster"
	"github.com/virtkit/virtkit/virt/storage/importer/contract"
	vsnap "github.com/virtkit/virtkit/virt/storage/snapshot"
)

const namespace = "default"

var (
	trace = flag.Bool("trace", false, "print when each step of a snapshot was first seen")
	keep  = flag.Bool("keep", false, "leave the cluster's data directory (its components' logs) behind")
)

type result struct {
	mib                    uint
	snapshot, restore      benchkit.Spread
	cp, cpAgain            benchkit.Spread
	snapRatio, restoreRate float64
	exported, plain        benchkit.Spread
	exportRate             float64
	cloneCSI, cloneCopy    benchkit.Spread
	cloneRatio, copyRatio  float64
}

func main() {
	sizes := flag.String("sizes", "1024,4096", "disk sizes in MiB, comma-separated")
	runs := flag.Int("runs", 5, "measured runs of each side and size, after one warm-up")
	repo := flag.String("repo", "../..", "checkout root (_output holds the binaries); the default fits a run from hack/bench")
	timeout := flag.Duration("timeout", 30*time.Minute, "limit for the whole benchmark")
	verbose := flag.Bool("v", false, "the components' logs on stderr")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := run(ctx, *sizes, *runs, *repo, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "bench-snapshot:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, sizes string, runs int, repo string, verbose bool) (err error) {
	c, err := localcluster.Start(ctx, localcluster.Options{Repo: repo, DataPrefix: "vks-", MetricsAddr: "0", Keep: *keep,
		Nodes: []string{fmt.Sprintf("snap-%d", os.Getpid())}, Logger: benchkit.ProgressLogger(verbose)})
	if err != nil {
		return err
	}
	defer func() {
		if serr := c.Stop(context.Background()); serr != nil && err == nil {
			err = serr
		}
	}()
	fmt.Printf("machine: %s, %d CPUs; file system of the data directory: %s\n", hostname(), cpus(), fsType(c.DataDir))
	if err := addCopyClass(ctx, c); err != nil {
		return err
	}
	var results []result
	for _, s := range strings.Split(sizes, ",") {
		mib, err := strconv.ParseUint(strings.TrimSpace(s), 10, 32)
		if err != nil {
			return fmt.Errorf("-sizes: %w", err)
		}
		r, err := size(ctx, c, uint(mib), runs)
		if err != nil {
			return fmt.Errorf("%d MiB: %w", mib, err)
		}
		results = append(results, r)
	}
	worstSnap, worstRestore, worstExport, worstClone := 0.0, 0.0, 0.0, 0.0
	for i, r := range results {
		fmt.Printf("%5d MiB  snapshot %s  restore %s  cp %s  cp of the copy %s  snapshot/cp %.2f  restore/(cp of the copy) %.2f\n",
			r.mib, r.snapshot, r.restore, r.cp, r.cpAgain, r.snapRatio, r.restoreRate)
		fmt.Printf("%5d MiB  download through the export %s  plain curl %s  export throughput / curl's %.2f\n",
			r.mib, r.exported, r.plain, r.exportRate)
		fmt.Printf("%5d MiB  DataVolume clone by the CSI driver %s  by an importer pod %s  cp %s  CSI clone/cp %.2f  importer/CSI clone %.2f\n",
			r.mib, r.cloneCSI, r.cloneCopy, r.cp, r.cloneRatio, r.copyRatio)
		worstSnap, worstRestore, worstClone = max(worstSnap, r.snapRatio), max(worstRestore, r.restoreRate), max(worstClone, r.cloneRatio)
		if i == 0 || r.exportRate < worstExport {
			worstExport = r.exportRate
		}
	}
	fmt.Printf("snapshot_ratio=%.2f restore_ratio=%.2f export_ratio=%.2f clone_ratio=%.2f\n", worstSnap, worstRestore, worstExport, worstClone)
	return nil
}

// size measures one disk size.
func size(ctx context.Context, c *localcluster.Cluster, mib uint, runs int) (result, error) {
	res := result{mib: mib}
	cl := c.Client
	name := fmt.Sprintf("disk-%d", mib)
	// A disk image claim, as a DataVolume leaves it (sized with the file
	// system's overhead, so that a clone of its size holds the disk):
	// exported raw.
	capacity := contract.RequiredSpace(int64(mib)<<20, contract.DefaultFilesystemOverhead)
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name,
		Annotations: map[string]string{"cdi.kubevirt.io/storage.contentType": "kubevirt"}},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: *resource.NewQuantity(capacity, resource.BinarySI)}}}}
	if err := cl.Create(ctx, pvc); err != nil {
		return res, err
	}
	if err := benchkit.Wait(ctx, "claim "+name+" bound", 50*time.Millisecond, func() (bool, error) {
		err := cl.Get(ctx, client.ObjectKeyFromObject(pvc), pvc)
		return err == nil && pvc.Status.Phase == corev1.ClaimBound, err
	}); err != nil {
		return res, err
	}
	folder, err := cluster.ClaimFolder(ctx, cl, c.DataDir, pvc)
	if err != nil {
		return res, err
	}
	disk := filepath.Join(folder, "disk.img")
	fmt.Printf("%d MiB: writing %s\n", mib, disk)
	if err := fill(disk, mib); err != nil {
		return res, err
	}
	vm := &virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: virtv1.VirtualMachineSpec{RunStrategy: ptr.To(virtv1.RunStrategyHalted), Template: &virtv1.VirtualMachineInstanceTemplateSpec{
			Spec: virtv1.VirtualMachineInstanceSpec{
				Domain: virtv1.DomainSpec{Resources: virtv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}},
					Devices: virtv1.Devices{Disks: []virtv1.Disk{{Name: "data", DiskDevice: virtv1.DiskDevice{Disk: &virtv1.DiskTarget{Bus: virtv1.DiskBusVirtio}}}}}},
				Volumes: []virtv1.Volume{{Name: "data", VolumeSource: virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
					PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}}}}}}}
	if err := cl.Create(ctx, vm); err != nil {
		return res, err
	}
	var snaps, restores, cps, cpsAgain []time.Duration
	for i := 0; i <= runs; i++ {
		first := i%2 == 0
		var s, r, p, p2 time.Duration
		var err error
		// Each side starts with nothing dirty in the page cache: the
		// writeback of the other side's copy is not on its clock.
		syscall.Sync()
		if first {
			if p, p2, err = copyPlain(ctx, disk); err == nil {
				s, r, err = snapshotAndRestore(ctx, c, vm, i)
			}
		} else {
			if s, r, err = snapshotAndRestore(ctx, c, vm, i); err == nil {
				p, p2, err = copyPlain(ctx, disk)
			}
		}
		if err != nil {
			return res, err
		}
		label := "warm-up"
		if i > 0 {
			label = fmt.Sprintf("run %d", i)
			snaps, restores, cps, cpsAgain = append(snaps, s), append(restores, r), append(cps, p), append(cpsAgain, p2)
		}
		fmt.Printf("%d MiB %s: snapshot %s restore %s cp %s cp of the copy %s\n", mib, label, s.Round(time.Millisecond), r.Round(time.Millisecond),
			p.Round(time.Millisecond), p2.Round(time.Millisecond))
	}
	res.snapshot, res.restore = benchkit.SpreadOf(snaps), benchkit.SpreadOf(restores)
	res.cp, res.cpAgain = benchkit.SpreadOf(cps), benchkit.SpreadOf(cpsAgain)
	res.snapRatio = res.snapshot.Median.Seconds() / res.cp.Median.Seconds()
	res.restoreRate = res.restore.Median.Seconds() / res.cpAgain.Median.Seconds()
	exported, plain, err := exportDownloads(ctx, c, name, disk, runs)
	if err != nil {
		return res, fmt.Errorf("export: %w", err)
	}
	res.exported, res.plain = benchkit.SpreadOf(exported), benchkit.SpreadOf(plain)
	res.exportRate = res.plain.Median.Seconds() / res.exported.Median.Seconds()
	csi, copied, err := clones(ctx, c, name, mib, runs)
	if err != nil {
		return res, fmt.Errorf("clones: %w", err)
	}
	res.cloneCSI, res.cloneCopy = benchkit.SpreadOf(csi), benchkit.SpreadOf(copied)
	res.cloneRatio = res.cloneCSI.Median.Seconds() / res.cp.Median.Seconds()
	res.copyRatio = res.cloneCopy.Median.Seconds() / res.cloneCSI.Median.Seconds()
	if err := cl.Delete(ctx, vm); err != nil {
		return res, err
	}
	if err := cl.Delete(ctx, pvc); err != nil {
		return res, err
	}
	return res, waitFolders(ctx, c.DataDir, 0, 0)
}

// snapshotAndRestore times a snapshot of vm and a restore of it to a new
// VM, then deletes both and waits until their copies are gone.
func snapshotAndRestore(ctx context.Context, c *localcluster.Cluster, vm *virtv1.VirtualMachine, i int) (time.Duration, time.Duration, error) {
	cl := c.Client
	s := &vmsnapshotv1.VirtualMachineSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("%s-snap-%d", vm.Name, i)},
		Spec: vmsnapshotv1.VirtualMachineSnapshotSpec{Source: corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: vm.Name}}}
	start := time.Now()
	if err := cl.Create(ctx, s); err != nil {
		return 0, 0, err
	}
	seen := map[string]time.Duration{}
	var order []string
	mark := func(stage string, ok bool) {
		if _, done := seen[stage]; ok && !done {
			seen[stage] = time.Since(start)
			order = append(order, stage)
		}
	}
	if err := benchkit.Wait(ctx, "snapshot "+s.Name+" ready", 20*time.Millisecond, func() (bool, error) {
		if err := cl.Get(ctx, client.ObjectKeyFromObject(s), s); err != nil {
			return false, err
		}
		if *trace {
			v := &virtv1.VirtualMachine{}
			mark("VM locked", cl.Get(ctx, client.ObjectKeyFromObject(vm), v) == nil && v.Status.SnapshotInProgress != nil)
			mark("content", s.Status != nil && s.Status.VirtualMachineSnapshotContentName != nil)
			vs := &volumesnapshotv1.VolumeSnapshot{}
			if cl.Get(ctx, client.ObjectKey{Namespace: namespace, Name: vsnap.VolumeSnapshotName(s.UID, "data")}, vs) == nil {
				mark("VolumeSnapshot", true)
				mark("VolumeSnapshot bound", vs.Status != nil && vs.Status.BoundVolumeSnapshotContentName != nil)
				mark("VolumeSnapshot ready", vs.Status != nil && ptr.Deref(vs.Status.ReadyToUse, false))
			}
		}
		if s.Status != nil && s.Status.Phase == vmsnapshotv1.Failed {
			return false, fmt.Errorf("failed: %+v", s.Status.Error)
		}
		return s.Status != nil && ptr.Deref(s.Status.ReadyToUse, false), nil
	}); err != nil {
		return 0, 0, err
	}
	snap := time.Since(start)
	printTrace("snapshot "+s.Name, order, seen, "ready", snap)
	syscall.Sync()
	target := fmt.Sprintf("%s-copy-%d", vm.Name, i)
	r := &vmsnapshotv1.VirtualMachineRestore{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: target},
		Spec: vmsnapshotv1.VirtualMachineRestoreSpec{Target: corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: target},
			VirtualMachineSnapshotName: s.Name}}
	start = time.Now()
	if err := cl.Create(ctx, r); err != nil {
		return 0, 0, err
	}
	seen, order = map[string]time.Duration{}, nil
	if err := benchkit.Wait(ctx, "restore "+r.Name+" complete", 20*time.Millisecond, func() (bool, error) {
		if err := cl.Get(ctx, client.ObjectKeyFromObject(r), r); err != nil {
			return false, err
		}
		if *trace && r.Status != nil && len(r.Status.Restores) > 0 {
			pvc := &corev1.PersistentVolumeClaim{}
			if cl.Get(ctx, client.ObjectKey{Namespace: namespace, Name: r.Status.Restores[0].PersistentVolumeClaimName}, pvc) == nil {
				mark("claim", true)
				mark("claim has a volume", pvc.Spec.VolumeName != "")
				mark("claim bound", pvc.Status.Phase == corev1.ClaimBound)
			}
			mark("VM", cl.Get(ctx, client.ObjectKey{Namespace: namespace, Name: target}, &virtv1.VirtualMachine{}) == nil)
		}
		return r.Status != nil && ptr.Deref(r.Status.Complete, false), nil
	}); err != nil {
		return 0, 0, err
	}
	restore := time.Since(start)
	printTrace("restore "+r.Name, order, seen, "complete", restore)
	for _, o := range []client.Object{r, s, &virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: target}}} {
		if err := cl.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			return 0, 0, err
		}
	}
	return snap, restore, waitFolders(ctx, c.DataDir, 1, 0)
}

// printTrace prints, with -trace, when each step of what was first seen
// and when it was done.
func printTrace(what string, order []string, seen map[string]time.Duration, done string, took time.Duration) {
	if !*trace {
		return
	}
	var parts []string
	for _, st := range order {
		parts = append(parts, fmt.Sprintf("%s %s", st, seen[st].Round(time.Millisecond)))
	}
	fmt.Printf("  %s: %s, %s %s\n", what, strings.Join(parts, ", "), done, took.Round(time.Millisecond))
}

// waitFolders waits until the CSI driver holds volumes volumes and
// snapshots snapshots.
func waitFolders(ctx context.Context, dataDir string, volumes, snapshots int) error {
	csi := cluster.Config{DataDir: dataDir}.CSIDir()
	return benchkit.Wait(ctx, fmt.Sprintf("%d volumes and %d snapshots left", volumes, snapshots), 100*time.Millisecond, func() (bool, error) {
		v, _ := os.ReadDir(filepath.Join(csi, "volumes"))
		s, _ := os.ReadDir(filepath.Join(csi, "snapshots"))
		return len(v) == volumes && len(s) == snapshots, nil
	})
}

// copyPlain times cp --reflink=auto --sparse=always of disk next to it,
// from a clean page cache, then of that copy at once, as the driver
// copies a volume into a snapshot and the snapshot into a restored
// volume; both copies are deleted after.
func copyPlain(ctx context.Context, disk string) (first, again time.Duration, err error) {
	dst, dst2 := disk+".cp", disk+".cp2"
	defer os.Remove(dst2)
	defer os.Remove(dst)
	syscall.Sync()
	cp := func(from, to string) (time.Duration, error) {
		start := time.Now()
		out, err := exec.CommandContext(ctx, "cp", "--reflink=auto", "--sparse=always", from, to).CombinedOutput()
		if err != nil {
			return 0, fmt.Errorf("cp: %v: %s", err, out)
		}
		return time.Since(start), nil
	}
	if first, err = cp(disk, dst); err != nil {
		return 0, 0, err
	}
	again, err = cp(dst, dst2)
	return first, again, err
}

// fill writes mib MiB of pseudo-random data to path and flushes it.
func fill(path string, mib uint) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o666)
	if err != nil {
		return err
	}
	rng := rand.NewChaCha8([32]byte{'s', 'n', 'a', 'p'})
	buf := make([]byte, 1<<20)
	for i := uint(0); i < mib; i++ {
		_, _ = rng.Read(buf)
		if _, err := f.Write(buf); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func hostname() string {
	h, _ := os.Hostname()
	return h
}

func cpus() int { return runtime.NumCPU() }

// fsType is the file system type under dir, from /proc/self/mounts.
func fsType(dir string) string {
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return "unknown"
	}
	best, typ := "", "unknown"
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) > 2 && strings.HasPrefix(dir, f[1]) && len(f[1]) > len(best) {
			best, typ = f[1], f[2]
		}
	}
	return typ
}

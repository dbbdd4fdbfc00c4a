package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/hack/bench/internal/benchkit"
	"github.com/virtkit/virtkit/internal/localcluster"
	"github.com/virtkit/virtkit/internal/testguest"
	"github.com/virtkit/virtkit/local/cluster"
	"github.com/virtkit/virtkit/virt/domain"
	domainlibvirt "github.com/virtkit/virtkit/virt/domain/libvirt"
	"github.com/virtkit/virtkit/virt/launcher"
	"github.com/virtkit/virtkit/virt/libvirtd"
	"github.com/virtkit/virtkit/virtapi/subresources"
)

const namespace = "default"

// runLocal starts virt-local with two nodes on a fresh data directory and,
// for each size, boots one VMI and migrates it o.runs times, back and
// forth; then, with o.blockMiB, the VMI with a data disk on a ReadWriteOnce
// claim (runBlock). virt-local is down again when it returns.
func runLocal(ctx context.Context, o options) (_ map[uint][]sample, block []sample, err error) {
	pid := os.Getpid()
	c, err := localcluster.Start(ctx, localcluster.Options{
		Repo: o.repo, DataPrefix: "vkm-local-", MetricsAddr: "0",
		Nodes:  []string{fmt.Sprintf("mig-%d-a", pid), fmt.Sprintf("mig-%d-b", pid)},
		Logger: benchkit.ProgressLogger(o.verbose),
	})
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if derr := c.Stop(context.Background()); derr != nil && err == nil {
			err = derr
		}
	}()
	image, cl := c.GuestImage, c.Client
	res := map[uint][]sample{}
	for _, size := range o.sizes {
		name := fmt.Sprintf("mig-%d", size)
		v, err := boot(ctx, cl, c.DataDir, name, image, size)
		if err == nil {
			for run := 0; run < o.runs && err == nil; run++ {
				var s sample
				if s, err = migrateOnce(ctx, cl, c.DataDir, v); err == nil {
					res[size] = append(res[size], s)
				}
			}
		}
		// Gone whatever happened, so that Down has nothing left to stop.
		if derr := cl.DeleteAllOf(ctx, &virtv1.VirtualMachineInstance{}, client.InNamespace(namespace)); derr != nil && err == nil {
			err = derr
		}
		if werr := waitNone(ctx, cl); werr != nil && err == nil {
			err = werr
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%d MiB: %w", size, err)
		}
	}
	if o.blockMiB > 0 {
		block, err = runBlock(ctx, cl, c.DataDir, image, o)
		if derr := cl.DeleteAllOf(ctx, &virtv1.VirtualMachineInstance{}, client.InNamespace(namespace)); derr != nil && err == nil {
			err = derr
		}
		if werr := waitNone(ctx, cl); werr != nil && err == nil {
			err = werr
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%d MiB data disk: %w", o.blockMiB, err)
		}
	}
	return res, block, nil
}

// runBlock boots the guest with a data disk on a ReadWriteOnce claim whose
// disk.img is o.blockMiB of data, and migrates it o.runs times: each time
// the migration copies the claim to a new one (the claim it left is then
// deleted, to keep the machine's disk).
func runBlock(ctx context.Context, cl client.WithWatch, dataDir, image string, o options) ([]sample, error) {
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "block-data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: *resource.NewQuantity(int64(o.blockMiB)<<20, resource.BinarySI)}},
		},
	}
	if err := cl.Create(ctx, pvc); err != nil {
		return nil, err
	}
	if err := benchkit.Wait(ctx, "claim "+pvc.Name+" bound", 100*time.Millisecond, func() (bool, error) {
		err := cl.Get(ctx, client.ObjectKeyFromObject(pvc), pvc)
		return err == nil && pvc.Status.Phase == corev1.ClaimBound, err
	}); err != nil {
		return nil, err
	}
	folder, err := cluster.ClaimFolder(ctx, cl, dataDir, pvc)
	if err != nil {
		return nil, err
	}
	if err := fillImage(filepath.Join(folder, "disk.img"), o.blockMiB); err != nil {
		return nil, err
	}
	v := benchkit.GuestVMI(namespace, "block", image, blockMemMiB, "migration")
	v.Spec.Domain.Devices.Disks = append(v.Spec.Domain.Devices.Disks, virtv1.Disk{Name: "data",
		DiskDevice: virtv1.DiskDevice{Disk: &virtv1.DiskTarget{Bus: virtv1.DiskBusVirtio}}})
	v.Spec.Volumes = append(v.Spec.Volumes, virtv1.Volume{Name: "data", VolumeSource: virtv1.VolumeSource{
		PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc.Name}}}})
	v, err = bootVMI(ctx, cl, dataDir, v)
	if err != nil {
		return nil, err
	}
	var out []sample
	for run := 0; run < o.runs; run++ {
		// The claim copy needs the handler's word that the claim is
		// ReadWriteOnce (not live-migratable as it is).
		if err := benchkit.Wait(ctx, "VMI "+v.Name+" reporting its claim", 100*time.Millisecond, func() (bool, error) {
			err := cl.Get(ctx, client.ObjectKeyFromObject(v), v)
			for _, c := range v.Status.Conditions {
				if c.Type == virtv1.VirtualMachineInstanceIsMigratable {
					return c.Status == corev1.ConditionFalse, err
				}
			}
			return false, err
		}); err != nil {
			return nil, err
		}
		old := v.Spec.Volumes[len(v.Spec.Volumes)-1].PersistentVolumeClaim.ClaimName
		s, err := migrateOnce(ctx, cl, dataDir, v)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
		if err := cl.Delete(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: old}}); err != nil {
			return nil, fmt.Errorf("deleting the claim %s the VMI left: %w", old, err)
		}
	}
	return out, nil
}

// boot creates the test guest's VMI and waits until the guest is ready.
func boot(ctx context.Context, cl client.Client, dataDir, name, image string, memMiB uint) (*virtv1.VirtualMachineInstance, error) {
	return bootVMI(ctx, cl, dataDir, benchkit.GuestVMI(namespace, name, image, memMiB, "migration"))
}

// bootVMI creates v and waits until its guest is ready.
func bootVMI(ctx context.Context, cl client.Client, dataDir string, v *virtv1.VirtualMachineInstance) (*virtv1.VirtualMachineInstance, error) {
	name := v.Name
	if err := cl.Create(ctx, v); err != nil {
		return nil, err
	}
	for {
		if err := cl.Get(ctx, client.ObjectKeyFromObject(v), v); err != nil {
			return nil, err
		}
		if v.Status.Phase == virtv1.Running {
			break
		}
		if v.IsFinal() {
			return nil, fmt.Errorf("VMI %s ended: %s %s", name, v.Status.Phase, v.Status.Reason)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("VMI %s not running: %w", name, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	readyCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	folder, err := cluster.Config{DataDir: dataDir}.LauncherFolder(ctx, cl, v, "")
	if err != nil {
		return nil, err
	}
	_, err = testguest.WaitLine(readyCtx, launcher.Layout{Root: folder}.SerialLog(), regexp.MustCompile(`^`+testguest.ReadyMarker))
	return v, err
}

// migrateOnce migrates the VMI to the other node as `virtctl migrate`
// does and measures it through a watch of the VMI.
func migrateOnce(ctx context.Context, cl client.WithWatch, dataDir string, v *virtv1.VirtualMachineInstance) (sample, error) {
	w, err := cl.Watch(ctx, &virtv1.VirtualMachineInstanceList{}, client.InNamespace(namespace),
		client.MatchingFields{"metadata.name": v.Name})
	if err != nil {
		return sample{}, err
	}
	defer w.Stop()
	mig := &virtv1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{GenerateName: subresources.MigrationGenerateName, Namespace: namespace},
		Spec:       virtv1.VirtualMachineInstanceMigrationSpec{VMIName: v.Name},
	}
	created := time.Now()
	if err := cl.Create(ctx, mig); err != nil {
		return sample{}, err
	}
	var started, completed time.Time
	var node string
	for completed.IsZero() {
		select {
		case <-ctx.Done():
			return sample{}, fmt.Errorf("migration %s: %w", mig.Name, ctx.Err())
		case e, ok := <-w.ResultChan():
			if !ok {
				return sample{}, fmt.Errorf("migration %s: the watch of VMI %s ended", mig.Name, v.Name)
			}
			got, isVMI := e.Object.(*virtv1.VirtualMachineInstance)
			if e.Type == watch.Error || !isVMI {
				continue
			}
			ms := got.Status.MigrationState
			if ms == nil || ms.MigrationUID != mig.UID {
				continue
			}
			if started.IsZero() && ms.StartTimestamp != nil {
				started = time.Now()
			}
			if ms.Failed {
				return sample{}, fmt.Errorf("migration %s failed: %s", mig.Name, ms.FailureReason)
			}
			if ms.Completed {
				completed, node = time.Now(), got.Status.NodeName
			}
		}
	}
	if started.IsZero() {
		return sample{}, fmt.Errorf("migration %s: its start was not seen", mig.Name)
	}
	for {
		if err := cl.Get(ctx, client.ObjectKeyFromObject(mig), mig); err != nil {
			return sample{}, err
		}
		if mig.Status.Phase == virtv1.MigrationSucceeded {
			break
		}
		if mig.Status.Phase == virtv1.MigrationFailed {
			return sample{}, fmt.Errorf("migration %s failed", mig.Name)
		}
		select {
		case <-ctx.Done():
			return sample{}, fmt.Errorf("migration %s: %w", mig.Name, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	s := sample{total: completed.Sub(started), endToEnd: time.Since(created)}
	// libvirt's downtime, from the target launcher's completed job.
	// The folder's path is too long for a socket address: libvirt dials
	// the socket through a handle on the folder.
	folder, err := cluster.Config{DataDir: dataDir}.LauncherFolder(ctx, cl, v, mig.UID)
	if err != nil {
		return sample{}, err
	}
	f, err := launcher.OpenFolder(launcher.Layout{Root: folder})
	if err != nil {
		return sample{}, err
	}
	defer f.Close()
	socket, release, err := f.LibvirtSocket()
	if err != nil {
		return sample{}, err
	}
	defer release()
	m, err := domainlibvirt.New(ctx, libvirtd.SocketURI(socket))
	if err != nil {
		return sample{}, err
	}
	defer m.Close()
	js, err := m.JobStats(ctx, launcher.DomainName(v.Namespace, v.Name), domain.JobStatsOptions{Completed: true})
	if err != nil {
		return sample{}, fmt.Errorf("migration %s: the target's completed job: %w", mig.Name, err)
	}
	if js.Type != domain.JobCompleted || js.Downtime == 0 {
		return sample{}, fmt.Errorf("migration %s: the target reports no completed migration with a downtime: %+v", mig.Name, js)
	}
	s.downtime = js.Downtime
	fmt.Printf("  %s to %s: %s (downtime %s), end to end %s\n", v.Name, node, s.total.Round(time.Millisecond), s.downtime, s.endToEnd.Round(time.Millisecond))
	// Let the source's pod end before the next one.
	time.Sleep(2 * time.Second)
	return s, nil
}

func waitNone(ctx context.Context, cl client.Client) error {
	for {
		var list virtv1.VirtualMachineInstanceList
		var pods corev1.PodList
		err := cl.List(ctx, &list, client.InNamespace(namespace))
		if err == nil {
			err = cl.List(ctx, &pods, client.InNamespace(namespace))
		}
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				running++
			}
		}
		if err == nil && len(list.Items) == 0 && running == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the VMIs to go (%d VMIs, %d pods left): %w", len(list.Items), running, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

package workloadupdate_test

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/controllers/vmi"
	"github.com/virtkit/virtkit/controllers/workloadupdate"
	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/internal/testenv/kubeenv"
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	testenv.Main(m)
}

// After an upgrade, on a real apiserver: the count reaches the KubeVirt
// CR, a migratable VMI gets a workload update migration, another VMI's
// launcher pod is evicted, a batch at a time, and nothing happens while the
// installation is not Deployed.
func TestReconcileOnAPIServer(t *testing.T) {
	ctx := context.Background()
	c, kv := install(t, virtv1.KubeVirtWorkloadUpdateStrategy{
		WorkloadUpdateMethods: []virtv1.WorkloadUpdateMethod{virtv1.WorkloadUpdateMethodLiveMigrate, virtv1.WorkloadUpdateMethodEvict},
		BatchEvictionSize:     ptr(1)})
	setPhase := func(phase virtv1.KubeVirtPhase, observed string) {
		t.Helper()
		assert.NilError(t, c.Get(ctx, client.ObjectKeyFromObject(kv), kv))
		kv.Status.Phase, kv.Status.TargetDeploymentID, kv.Status.ObservedDeploymentID = phase, "v2", observed
		assert.NilError(t, c.Status().Update(ctx, kv))
	}
	setPhase(virtv1.KubeVirtPhaseDeploying, "v1")

	mover := vmiOn(t, c, "mover", oldImage, true)
	stayers := []*virtv1.VirtualMachineInstance{vmiOn(t, c, "stayer1", oldImage, false), vmiOn(t, c, "stayer2", oldImage, false)}
	vmiOn(t, c, "current", newImage, false)
	var pods []*corev1.Pod
	for _, v := range stayers {
		pods = append(pods, launcherPod(t, c, v))
	}

	clock := clocktesting.NewFakePassiveClock(time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC))
	rec := record.NewFakeRecorder(20)
	r := workloadupdate.New("", func(*virtv1.KubeVirt) string { return newImage },
		workloadupdate.WithClient(c, c), workloadupdate.WithClock(clock), workloadupdate.WithEventRecorder(rec))
	reconcile := func() ctrl.Result {
		t.Helper()
		res, err := r.Reconcile(ctx, ctrl.Request{})
		assert.NilError(t, err)
		return res
	}
	migrations := func() []virtv1.VirtualMachineInstanceMigration {
		t.Helper()
		var l virtv1.VirtualMachineInstanceMigrationList
		assert.NilError(t, c.List(ctx, &l, client.InNamespace("vms")))
		return l.Items
	}

	// While virt-operator deploys, nothing.
	assert.Equal(t, reconcile(), ctrl.Result{})
	assert.NilError(t, c.Get(ctx, client.ObjectKeyFromObject(kv), kv))
	assert.Check(t, kv.Status.OutdatedVirtualMachineInstanceWorkloads == nil)
	assert.Check(t, is.Len(migrations(), 0))

	setPhase(virtv1.KubeVirtPhaseDeployed, "v2")
	assert.Equal(t, reconcile(), ctrl.Result{RequeueAfter: workloadupdate.RecheckAfter})
	assert.NilError(t, c.Get(ctx, client.ObjectKeyFromObject(kv), kv))
	assert.Assert(t, kv.Status.OutdatedVirtualMachineInstanceWorkloads != nil)
	assert.Equal(t, *kv.Status.OutdatedVirtualMachineInstanceWorkloads, 3)
	migs := migrations()
	assert.Assert(t, is.Len(migs, 1))
	assert.Equal(t, migs[0].Spec.VMIName, mover.Name)
	assert.Check(t, metav1.HasAnnotation(migs[0].ObjectMeta, virtv1.WorkloadUpdateMigrationAnnotation))
	assert.Check(t, is.Contains(migs[0].Name, workloadupdate.MigrationGenerateName))
	// One batch of one: the first stayer's pod is evicted, the second's stays.
	assert.Check(t, gone(t, c, pods[0]), "the first batch evicts %s", pods[0].Name)
	assert.Check(t, !gone(t, c, pods[1]), "the second pod waits for the next batch")
	assert.Equal(t, <-rec.Events, "Normal SuccessfulCreate Created Migration "+migs[0].Name+" for automated workload update")
	assert.Equal(t, <-rec.Events, "Normal SuccessfulEvict Initiated eviction of VMI as part of automated workload update")

	// A second look before the interval: the migration is pending, so no
	// second one; no eviction either.
	reconcile()
	assert.Check(t, is.Len(migrations(), 1))
	assert.Check(t, !gone(t, c, pods[1]))

	// After the interval, the next batch.
	clock.SetTime(clock.Now().Add(workloadupdate.DefaultBatchEvictionInterval))
	reconcile()
	assert.Check(t, gone(t, c, pods[1]), "the second batch")

	// The VMIs moved (the migrated one on the new launcher once its
	// migration succeeded, the evicted ones gone): the count follows, and
	// nothing is left to wait for.
	mig := migrations()[0]
	mig.Status.Phase = virtv1.MigrationSucceeded
	assert.NilError(t, c.Status().Update(ctx, &mig))
	mover.Status.LauncherContainerImageVersion = newImage
	assert.NilError(t, c.Status().Update(ctx, mover))
	for _, v := range stayers {
		assert.NilError(t, c.Delete(ctx, v))
	}
	assert.Equal(t, reconcile(), ctrl.Result{})
	assert.NilError(t, c.Get(ctx, client.ObjectKeyFromObject(kv), kv))
	assert.Equal(t, *kv.Status.OutdatedVirtualMachineInstanceWorkloads, 0)
}

// install starts a control plane with the namespaces kubevirt (holding a
// KubeVirt CR with the workload update strategy ws) and vms.
func install(t *testing.T, ws virtv1.KubeVirtWorkloadUpdateStrategy) (client.Client, *virtv1.KubeVirt) {
	t.Helper()
	c := kubeenv.ControlPlane(t).Client
	ctx := context.Background()
	for _, ns := range []string{"kubevirt", "vms"} {
		assert.NilError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	kv := &virtv1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "kubevirt"},
		Spec: virtv1.KubeVirtSpec{WorkloadUpdateStrategy: ws}}
	assert.NilError(t, c.Create(ctx, kv))
	return c, kv
}

// vmiOn creates a Running VMI vms/name on a launcher of image.
func vmiOn(t *testing.T, c client.Client, name, image string, migratable bool) *virtv1.VirtualMachineInstance {
	t.Helper()
	ctx := context.Background()
	v := &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "vms", Name: name},
		Spec: virtv1.VirtualMachineInstanceSpec{Domain: virtv1.DomainSpec{Devices: virtv1.Devices{}}}}
	assert.NilError(t, c.Create(ctx, v))
	st := running(name, image, migratable).Status
	st.NodeName = "node1"
	v.Status = st
	assert.NilError(t, c.Status().Update(ctx, v))
	return v
}

// launcherPod creates v's launcher pod on node1, as virt-controller would.
func launcherPod(t *testing.T, c client.Client, v *virtv1.VirtualMachineInstance) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: v.Namespace, Name: "virt-launcher-" + v.Name,
		Labels: map[string]string{virtv1.AppLabel: vmi.LauncherLabelValue, virtv1.CreatedByLabel: string(v.UID)}},
		Spec: corev1.PodSpec{NodeName: "node1", Containers: []corev1.Container{{Name: "compute", Image: oldImage}}}}
	assert.NilError(t, c.Create(context.Background(), p))
	return p
}

// gone reports whether p is deleted or being deleted (a pod on a node
// without a kubelet keeps its deletion timestamp).
func gone(t *testing.T, c client.Client, p *corev1.Pod) bool {
	t.Helper()
	cur := &corev1.Pod{}
	err := c.Get(context.Background(), client.ObjectKeyFromObject(p), cur)
	if apierrors.IsNotFound(err) {
		return true
	}
	assert.NilError(t, err)
	return cur.DeletionTimestamp != nil
}

func ptr[T any](v T) *T { return &v }

// A rollback before a workload update migration got far: the launcher image
// in force is the VMI's own again, so the controller deletes (cancels) the
// migration it made, and says so on the VMI; a user's migration stays.
func TestRollbackOnAPIServer(t *testing.T) {
	ctx := context.Background()
	c, kv := install(t, virtv1.KubeVirtWorkloadUpdateStrategy{
		WorkloadUpdateMethods: []virtv1.WorkloadUpdateMethod{virtv1.WorkloadUpdateMethodLiveMigrate}})
	kv.Status = virtv1.KubeVirtStatus{Phase: virtv1.KubeVirtPhaseDeployed, TargetDeploymentID: "v2", ObservedDeploymentID: "v2"}
	assert.NilError(t, c.Status().Update(ctx, kv))
	vm1, vm2 := vmiOn(t, c, "vm1", oldImage, true), vmiOn(t, c, "vm2", oldImage, true)

	image := newImage
	rec := record.NewFakeRecorder(20)
	r := workloadupdate.New("", func(*virtv1.KubeVirt) string { return image },
		workloadupdate.WithClient(c, c), workloadupdate.WithEventRecorder(rec))
	_, err := r.Reconcile(ctx, ctrl.Request{})
	assert.NilError(t, err)
	var migs virtv1.VirtualMachineInstanceMigrationList
	assert.NilError(t, c.List(ctx, &migs, client.InNamespace("vms")))
	assert.Assert(t, is.Len(migs.Items, 2))
	user := &virtv1.VirtualMachineInstanceMigration{ObjectMeta: metav1.ObjectMeta{Namespace: "vms", Name: "by-hand"},
		Spec: virtv1.VirtualMachineInstanceMigrationSpec{VMIName: vm2.Name}}
	assert.NilError(t, c.Create(ctx, user))

	image = oldImage // rolled back
	_, err = r.Reconcile(ctx, ctrl.Request{})
	assert.NilError(t, err)
	assert.NilError(t, c.List(ctx, &migs, client.InNamespace("vms")))
	assert.Assert(t, is.Len(migs.Items, 1), "only the user's migration is left: %v", migs.Items)
	assert.Equal(t, migs.Items[0].Name, user.Name)
	var abortions []string
	for len(rec.Events) > 0 {
		if e := <-rec.Events; strings.Contains(e, workloadupdate.ReasonSuccessfulChangeAbortion) {
			abortions = append(abortions, e)
		}
	}
	sort.Strings(abortions) // migration names are generated
	assert.DeepEqual(t, abortions, []string{
		"Normal SuccessfulChangeAbortion Aborted change for vmi: " + vm1.Name,
		"Normal SuccessfulChangeAbortion Aborted change for vmi: " + vm2.Name})
	assert.NilError(t, c.Get(ctx, client.ObjectKeyFromObject(kv), kv))
	assert.Equal(t, *kv.Status.OutdatedVirtualMachineInstanceWorkloads, 0)
}

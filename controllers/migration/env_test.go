package migration_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	virtv1 "kubevirt.io/api/core/v1"
	migrationsv1 "kubevirt.io/api/migrations/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/controllers/migration"
	"github.com/virtkit/virtkit/controllers/vmi"
	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/internal/testenv/kubeenv"
	"github.com/virtkit/virtkit/virt/clusterconfig"
	"github.com/virtkit/virtkit/virt/launcher/contract"
	"github.com/virtkit/virtkit/virt/storage/backendstorage"
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	testenv.Main(m)
}

// cluster is a real apiserver with the migration controller in a manager.
// No scheduler, kubelet or handler runs: the tests play them.
type cluster struct {
	c client.Client
}

func startCluster(t *testing.T, opts ...migration.Option) *cluster {
	env := kubeenv.ControlPlane(t)
	mgr := kubeenv.NewManager(t, env)
	r := migration.New(append([]migration.Option{migration.WithPodOptions(vmi.PodOptions{LauncherImage: "virtkit/virt-launcher:test", Emulation: true})}, opts...)...)
	assert.NilError(t, r.SetupWithManager(mgr))
	kubeenv.RunManager(t, mgr)
	c := env.Client
	assert.NilError(t, c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clusterconfig.DefaultNamespace}}))
	return &cluster{c: c}
}

// outboundLimit installs a KubeVirt CR that lets n migrations leave a node at once.
func (cl *cluster) outboundLimit(t *testing.T, n uint32) {
	t.Helper()
	assert.NilError(t, cl.c.Create(context.Background(), &virtv1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: clusterconfig.DefaultNamespace},
		Spec: virtv1.KubeVirtSpec{Configuration: virtv1.KubeVirtConfiguration{MigrationConfiguration: &virtv1.MigrationConfiguration{
			ParallelOutboundMigrationsPerNode: &n}}}}))
}

func (cl *cluster) namespace(t *testing.T, name string, labels map[string]string) string {
	t.Helper()
	assert.NilError(t, cl.c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}))
	return name
}

// runningVMI creates a VMI that runs on node, as the VMI controller and
// the node's handler leave it, with its launcher pod.
func (cl *cluster) runningVMI(t *testing.T, ns, name, node string, migratable bool) *virtv1.VirtualMachineInstance {
	t.Helper()
	ctx := context.Background()
	v := &virtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": name}},
		Spec: virtv1.VirtualMachineInstanceSpec{Domain: virtv1.DomainSpec{
			Resources: virtv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}},
		}},
	}
	assert.NilError(t, cl.c.Create(ctx, v))
	pod, err := vmi.RenderPod(v, vmi.PodOptions{LauncherImage: "virtkit/virt-launcher:test", Emulation: true})
	assert.NilError(t, err)
	pod.Spec.NodeName = node
	assert.NilError(t, cl.c.Create(ctx, pod))
	status := corev1.ConditionTrue
	if !migratable {
		status = corev1.ConditionFalse
	}
	v.Status = virtv1.VirtualMachineInstanceStatus{Phase: virtv1.Running, NodeName: node,
		Conditions: []virtv1.VirtualMachineInstanceCondition{{Type: virtv1.VirtualMachineInstanceIsMigratable, Status: status,
			Reason:  map[bool]string{false: virtv1.VirtualMachineInstanceReasonDisksNotMigratable}[migratable],
			Message: map[bool]string{false: "cannot migrate VMI with non-shared HostDisk"}[migratable]}}}
	assert.NilError(t, cl.c.Status().Update(ctx, v))
	return v
}

func (cl *cluster) migrate(t *testing.T, v *virtv1.VirtualMachineInstance) *virtv1.VirtualMachineInstanceMigration {
	t.Helper()
	m := &virtv1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "mig-", Namespace: v.Namespace},
		Spec:       virtv1.VirtualMachineInstanceMigrationSpec{VMIName: v.Name},
	}
	assert.NilError(t, cl.c.Create(context.Background(), m))
	return m
}

func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	testenv.EventuallyEvery(testenv.Within(t, 20*time.Second), t, 50*time.Millisecond, what, cond)
}

// waitPhase waits for the migration's phase and returns it then, nil once it is gone.
func (cl *cluster) waitPhase(t *testing.T, m *virtv1.VirtualMachineInstanceMigration, phase virtv1.VirtualMachineInstanceMigrationPhase) *virtv1.VirtualMachineInstanceMigration {
	t.Helper()
	var got *virtv1.VirtualMachineInstanceMigration
	eventually(t, "migration "+m.Name+" "+string(phase), func() (bool, string) {
		got = &virtv1.VirtualMachineInstanceMigration{}
		if err := cl.c.Get(context.Background(), client.ObjectKeyFromObject(m), got); err != nil {
			return false, err.Error()
		}
		return got.Status.Phase == phase, fmt.Sprintf("phase %s, state %+v", got.Status.Phase, got.Status.MigrationState)
	})
	return got
}

func (cl *cluster) waitGone(t *testing.T, obj client.Object) {
	t.Helper()
	eventually(t, fmt.Sprintf("%T %s gone", obj, obj.GetName()), func() (bool, string) {
		err := cl.c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		return false, fmt.Sprintf("err %v, deleting %v, finalizers %v", err, obj.GetDeletionTimestamp(), obj.GetFinalizers())
	})
}

func (cl *cluster) vmi(t *testing.T, v *virtv1.VirtualMachineInstance) *virtv1.VirtualMachineInstance {
	t.Helper()
	got := &virtv1.VirtualMachineInstance{}
	assert.NilError(t, cl.c.Get(context.Background(), client.ObjectKeyFromObject(v), got))
	return got
}

// targetPod waits for the migration's target pod.
func (cl *cluster) targetPod(t *testing.T, m *virtv1.VirtualMachineInstanceMigration) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	eventually(t, "the target pod of "+m.Name, func() (bool, string) {
		var pods corev1.PodList
		assert.NilError(t, cl.c.List(context.Background(), &pods, client.InNamespace(m.Namespace), client.MatchingLabels{virtv1.MigrationJobLabel: string(m.UID)}))
		if len(pods.Items) != 1 {
			return false, fmt.Sprintf("%d pods", len(pods.Items))
		}
		pod = &pods.Items[0]
		return true, ""
	})
	return pod
}

// handler plays a node's handler: it changes the VMI's migrationState.
func (cl *cluster) handler(t *testing.T, v *virtv1.VirtualMachineInstance, edit func(*virtv1.VirtualMachineInstanceStatus)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got := &virtv1.VirtualMachineInstance{}
		if err := cl.c.Get(context.Background(), client.ObjectKeyFromObject(v), got); err != nil {
			return err
		}
		edit(&got.Status)
		return cl.c.Status().Update(context.Background(), got)
	})
	assert.NilError(t, err)
}

// kubelet plays the scheduler and the kubelet for a pod.
func (cl *cluster) kubelet(t *testing.T, pod *corev1.Pod, edit func(*corev1.Pod)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got := &corev1.Pod{}
		if err := cl.c.Get(context.Background(), client.ObjectKeyFromObject(pod), got); err != nil {
			return err
		}
		edit(got)
		return cl.c.Status().Update(context.Background(), got)
	})
	assert.NilError(t, err)
}

func (cl *cluster) bind(t *testing.T, pod *corev1.Pod, node string) {
	t.Helper()
	b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace}, Target: corev1.ObjectReference{Kind: "Node", Name: node}}
	assert.NilError(t, cl.c.SubResource("binding").Create(context.Background(), pod, b))
}

func ready(p *corev1.Pod) {
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "compute", Ready: true,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
}

func TestMigrationController(t *testing.T) {
	cl := startCluster(t)
	ctx := context.Background()

	t.Run("phases of a migration that succeeds", func(t *testing.T) {
		ns := cl.namespace(t, "succeeds", map[string]string{"tier": "gold"})
		policy := &migrationsv1.MigrationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "gold"}, Spec: migrationsv1.MigrationPolicySpec{
			BandwidthPerMigration: resource.NewQuantity(1<<20, resource.BinarySI),
			Selectors:             &migrationsv1.Selectors{NamespaceSelector: migrationsv1.LabelSelector{"tier": "gold"}}}}
		assert.NilError(t, cl.c.Create(ctx, policy))
		v := cl.runningVMI(t, ns, "vmi1", "node-a", true)
		m := cl.migrate(t, v)
		got := cl.waitPhase(t, m, virtv1.MigrationScheduling)
		assert.Assert(t, strings.Contains(strings.Join(got.Finalizers, ","), migration.Finalizer), got.Finalizers)

		pod := cl.targetPod(t, got)
		assert.Equal(t, pod.Labels[virtv1.MigrationSelectorLabel], "vmi1")
		assert.Equal(t, pod.Labels[virtv1.MigrationJobLabel], string(got.UID))
		assert.DeepEqual(t, pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields,
			[]corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"node-a"}}})
		ms := cl.vmi(t, v).Status.MigrationState
		assert.Assert(t, ms != nil)
		assert.Equal(t, ms.MigrationUID, got.UID)
		assert.Equal(t, ms.SourceNode, "node-a")
		assert.Assert(t, strings.HasPrefix(ms.SourcePod, "virt-launcher-vmi1-"), ms.SourcePod)
		assert.Equal(t, ms.TargetPod, pod.Name)
		assert.Equal(t, *ms.MigrationPolicyName, "gold")
		assert.Equal(t, ms.MigrationConfiguration.BandwidthPerMigration.Value(), int64(1<<20))

		done := cl.runTo(t, v, m, pod)
		var phases []string
		for _, p := range done.Status.PhaseTransitionTimestamps {
			phases = append(phases, string(p.Phase))
		}
		assert.Equal(t, strings.Join(phases, " "), "Pending Scheduling Scheduled PreparingTarget TargetReady Running Succeeded")
		assert.Assert(t, done.Status.MigrationState.Completed && done.Status.MigrationState.TargetNode == "node-b", "%+v", done.Status.MigrationState)
		eventually(t, "the finalizer removed", func() (bool, string) {
			got := &virtv1.VirtualMachineInstanceMigration{}
			assert.NilError(t, cl.c.Get(ctx, client.ObjectKeyFromObject(m), got))
			return len(got.Finalizers) == 0, fmt.Sprint(got.Finalizers)
		})
		// The target pod is now the VMI's.
		assert.NilError(t, cl.c.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{}))
	})

	t.Run("a VMI that cannot migrate", func(t *testing.T) {
		ns := cl.namespace(t, "refused", nil)
		v := cl.runningVMI(t, ns, "vmi1", "node-a", false)
		m := cl.migrate(t, v)
		got := cl.waitPhase(t, m, virtv1.MigrationFailed)
		assert.ErrorContains(t, fmt.Errorf("%s", got.Status.MigrationState.FailureReason), "is not live-migratable: DisksNotLiveMigratable: cannot migrate VMI with non-shared HostDisk")
		var pods corev1.PodList
		assert.NilError(t, cl.c.List(ctx, &pods, client.InNamespace(ns), client.HasLabels{virtv1.MigrationJobLabel}))
		assert.Equal(t, len(pods.Items), 0)
		assert.Assert(t, cl.vmi(t, v).Status.MigrationState == nil, "the VMI is not touched")
	})

	t.Run("no VMI", func(t *testing.T) {
		ns := cl.namespace(t, "novmi", nil)
		m := cl.migrate(t, &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ghost"}})
		got := cl.waitPhase(t, m, virtv1.MigrationFailed)
		assert.Equal(t, got.Status.MigrationState.FailureReason, "VirtualMachineInstance novmi/ghost does not exist")
	})

	t.Run("cancelled before it started", func(t *testing.T) {
		ns := cl.namespace(t, "cancelearly", nil)
		v := cl.runningVMI(t, ns, "vmi1", "node-a", true)
		m := cl.migrate(t, v)
		cl.waitPhase(t, m, virtv1.MigrationScheduling)
		pod := cl.targetPod(t, m)
		cl.bind(t, pod, "node-b")
		cl.waitPhase(t, m, virtv1.MigrationScheduled)
		assert.NilError(t, cl.c.Delete(ctx, m))
		cl.waitGone(t, m)
		ms := cl.vmi(t, v).Status.MigrationState
		assert.Assert(t, ms.Completed && ms.Failed && ms.AbortRequested && ms.AbortStatus == virtv1.MigrationAbortSucceeded, "%+v", ms)
		got := &corev1.Pod{}
		assert.NilError(t, cl.c.Get(ctx, client.ObjectKeyFromObject(pod), got))
		assert.Assert(t, got.DeletionTimestamp != nil, "the target pod is being deleted")
	})

	t.Run("cancelled while it runs", func(t *testing.T) {
		ns := cl.namespace(t, "cancelrunning", nil)
		v := cl.runningVMI(t, ns, "vmi1", "node-a", true)
		m := cl.migrate(t, v)
		cl.waitPhase(t, m, virtv1.MigrationScheduling)
		pod := cl.targetPod(t, m)
		cl.bind(t, pod, "node-b")
		cl.kubelet(t, pod, ready)
		cl.waitPhase(t, m, virtv1.MigrationPreparingTarget)
		now := metav1.Now()
		cl.handler(t, v, func(st *virtv1.VirtualMachineInstanceStatus) {
			st.MigrationState.TargetNodeAddress, st.MigrationState.StartTimestamp = "node-b", &now
		})
		cl.waitPhase(t, m, virtv1.MigrationRunning)
		assert.NilError(t, cl.c.Delete(ctx, m))
		eventually(t, "abortRequested", func() (bool, string) {
			ms := cl.vmi(t, v).Status.MigrationState
			return ms.AbortRequested && ms.AbortStatus == virtv1.MigrationAbortInProgress, fmt.Sprintf("%+v", ms)
		})
		// The migration waits for the source's handler.
		got := &virtv1.VirtualMachineInstanceMigration{}
		assert.NilError(t, cl.c.Get(ctx, client.ObjectKeyFromObject(m), got))
		assert.Equal(t, got.Status.Phase, virtv1.MigrationRunning)
		cl.handler(t, v, func(st *virtv1.VirtualMachineInstanceStatus) {
			ms := st.MigrationState
			ms.Completed, ms.Failed, ms.AbortStatus, ms.EndTimestamp, ms.FailureReason = true, true, virtv1.MigrationAbortSucceeded, &now, "cancelled"
		})
		cl.waitGone(t, m)
		assert.NilError(t, cl.c.Get(ctx, client.ObjectKeyFromObject(pod), pod))
		assert.Assert(t, pod.DeletionTimestamp != nil, "the target pod is being deleted")
		assert.Equal(t, cl.vmi(t, v).Status.NodeName, "node-a")
	})

	t.Run("a hotplugged disk is brought to the target first", func(t *testing.T) {
		ns := cl.namespace(t, "hotplugged", nil)
		v := cl.runningVMI(t, ns, "vmi1", "node-a", true)
		claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data"},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}}}}
		assert.NilError(t, cl.c.Create(ctx, claim))
		assert.NilError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			got := cl.vmi(t, v)
			got.Spec.Volumes = append(got.Spec.Volumes, virtv1.Volume{Name: "hot", VolumeSource: virtv1.VolumeSource{
				PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{Hotpluggable: true,
					PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim.Name}}}})
			got.Spec.Domain.Devices.Disks = append(got.Spec.Domain.Devices.Disks, virtv1.Disk{Name: "hot"})
			return cl.c.Update(ctx, got)
		}))
		cl.handler(t, v, func(st *virtv1.VirtualMachineInstanceStatus) {
			st.VolumeStatus = []virtv1.VolumeStatus{{Name: "hot", Target: "sda", Phase: virtv1.VolumeReady,
				HotplugVolume: &virtv1.HotplugVolumeStatus{AttachPodName: "hp-source"}}}
		})
		m := cl.migrate(t, v)
		cl.waitPhase(t, m, virtv1.MigrationScheduling)
		pod := cl.targetPod(t, m)
		cl.bind(t, pod, "node-b")
		cl.kubelet(t, pod, ready)
		var hp *corev1.Pod
		eventually(t, "the attachment pod next to the target", func() (bool, string) {
			var pods corev1.PodList
			assert.NilError(t, cl.c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{virtv1.AppLabel: contract.HotplugLabelValue}))
			if len(pods.Items) != 1 {
				return false, fmt.Sprintf("%d pods", len(pods.Items))
			}
			hp = &pods.Items[0]
			return true, ""
		})
		assert.Assert(t, metav1.IsControlledBy(hp, pod), "%+v", hp.OwnerReferences)
		assert.Equal(t, vmi.AttachedVolume(hp), "hot")
		assert.Equal(t, hp.Spec.Volumes[0].PersistentVolumeClaim.ClaimName, "data")
		assert.DeepEqual(t, hp.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0].Values, []string{"node-b"})
		// Held until it is Ready.
		time.Sleep(300 * time.Millisecond)
		held := &virtv1.VirtualMachineInstanceMigration{}
		assert.NilError(t, cl.c.Get(ctx, client.ObjectKeyFromObject(m), held))
		assert.Equal(t, held.Status.Phase, virtv1.MigrationScheduled)
		cl.bind(t, hp, "node-b")
		cl.kubelet(t, hp, ready)
		cl.waitPhase(t, m, virtv1.MigrationPreparingTarget)
	})

	t.Run("backend storage: a claim of the target's, handed off on success", func(t *testing.T) {
		ns := cl.namespace(t, "statestorage", nil)
		v, source := cl.stateVMI(t, ns)
		m := cl.migrate(t, v)
		got := cl.waitPhase(t, m, virtv1.MigrationScheduling)
		pod := cl.targetPod(t, got)
		target := vmi.StateClaimOf(pod)
		assert.Assert(t, target != "" && target != source, "the target pod mounts %q; the source's claim is %s", target, source)
		claim := &corev1.PersistentVolumeClaim{}
		assert.NilError(t, cl.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: target}, claim))
		assert.DeepEqual(t, claim.Labels, map[string]string{backendstorage.LabelMigration: m.Name})
		assert.Equal(t, *claim.Spec.StorageClassName, "state")
		ms := cl.vmi(t, v).Status.MigrationState
		assert.Equal(t, ms.SourcePersistentStatePVCName, source)
		assert.Equal(t, ms.TargetPersistentStatePVCName, target)

		cl.runTo(t, v, m, pod)
		eventually(t, "the target's claim handed to the VM, the source's deleted", func() (bool, string) {
			assert.NilError(t, cl.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: target}, claim))
			src := &corev1.PersistentVolumeClaim{}
			err := cl.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: source}, src)
			srcGoing := apierrors.IsNotFound(err) || (err == nil && src.DeletionTimestamp != nil)
			return claim.Labels[backendstorage.LabelVM] == v.Name && claim.Labels[backendstorage.LabelMigration] == "" && srcGoing,
				fmt.Sprintf("target labels %v; source: %v", claim.Labels, err)
		})
	})

	t.Run("backend storage: the target's claim dropped on failure", func(t *testing.T) {
		ns := cl.namespace(t, "statedropped", nil)
		v, source := cl.stateVMI(t, ns)
		m := cl.migrate(t, v)
		cl.waitPhase(t, m, virtv1.MigrationScheduling)
		target := vmi.StateClaimOf(cl.targetPod(t, m))
		assert.NilError(t, cl.c.Delete(ctx, m))
		eventually(t, "the target's claim deleted, the source's kept", func() (bool, string) {
			claim := &corev1.PersistentVolumeClaim{}
			err := cl.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: target}, claim)
			gone := apierrors.IsNotFound(err) || (err == nil && claim.DeletionTimestamp != nil)
			return gone, fmt.Sprintf("target claim: %v", err)
		})
		src := &corev1.PersistentVolumeClaim{}
		assert.NilError(t, cl.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: source}, src))
		assert.Assert(t, src.DeletionTimestamp == nil && src.Labels[backendstorage.LabelVM] == v.Name, "%+v", src.ObjectMeta)
	})

	t.Run("target pod fails before the start", func(t *testing.T) {
		ns := cl.namespace(t, "targetfails", nil)
		v := cl.runningVMI(t, ns, "vmi1", "node-a", true)
		m := cl.migrate(t, v)
		cl.waitPhase(t, m, virtv1.MigrationScheduling)
		pod := cl.targetPod(t, m)
		cl.bind(t, pod, "node-b")
		cl.kubelet(t, pod, func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodFailed
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: vmi.ComputeContainer,
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 5, Message: "libvirtd did not start"}}}}
		})
		got := cl.waitPhase(t, m, virtv1.MigrationFailed)
		assert.Equal(t, got.Status.MigrationState.FailureReason, "the target pod "+pod.Name+" ended (exit code 5: libvirtd did not start) before the migration started")
		ms := cl.vmi(t, v).Status.MigrationState
		assert.Assert(t, ms.Failed && ms.Completed, "%+v", ms)
	})
}

// The parallel limits of the KubeVirt CR hold migrations in Pending.
func TestMigrationControllerLimits(t *testing.T) {
	cl := startCluster(t)
	ctx := context.Background()
	cl.outboundLimit(t, 1)
	ns := cl.namespace(t, "limits", nil)
	a1 := cl.runningVMI(t, ns, "a1", "node-a", true)
	a2 := cl.runningVMI(t, ns, "a2", "node-a", true)
	b1 := cl.runningVMI(t, ns, "b1", "node-b", true)
	m1 := cl.migrate(t, a1)
	cl.waitPhase(t, m1, virtv1.MigrationScheduling)
	m2 := cl.migrate(t, a2)
	m3 := cl.migrate(t, b1)
	cl.waitPhase(t, m3, virtv1.MigrationScheduling) // another node's slot
	time.Sleep(2 * time.Second)                     // a second chance to start, which it must not take
	got := &virtv1.VirtualMachineInstanceMigration{}
	assert.NilError(t, cl.c.Get(ctx, client.ObjectKeyFromObject(m2), got))
	assert.Equal(t, got.Status.Phase, virtv1.MigrationPending, "one migration at a time leaves node-a")

	// m1 ends: m2 starts.
	now := metav1.Now()
	cl.handler(t, a1, func(st *virtv1.VirtualMachineInstanceStatus) {
		st.MigrationState.Completed, st.MigrationState.Failed, st.MigrationState.EndTimestamp = true, true, &now
	})
	cl.waitPhase(t, m1, virtv1.MigrationFailed)
	cl.waitPhase(t, m2, virtv1.MigrationScheduling)
}

// TestMigrationWithoutHandlers plays a cluster whose handlers died: the
// target's handler never prepares the first migration and the source's
// never starts the second. Each fails once HandlerTimeout passes, with the
// node named, its target pod deleted and the VMI's migrationState ended, and
// its parallel slot goes to the next migration of the node.
func TestMigrationWithoutHandlers(t *testing.T) {
	cl := startCluster(t, migration.WithTimeouts(migration.Timeouts{Handler: 2 * time.Second}))
	ctx := context.Background()
	cl.outboundLimit(t, 1)
	ns := cl.namespace(t, "dead-handlers", nil)
	a1 := cl.runningVMI(t, ns, "a1", "node-a", true)
	a2 := cl.runningVMI(t, ns, "a2", "node-a", true)
	m1 := cl.migrate(t, a1)
	cl.waitPhase(t, m1, virtv1.MigrationScheduling)
	m2 := cl.migrate(t, a2) // held: node-a's one slot is m1's

	toReady := func(m *virtv1.VirtualMachineInstanceMigration) *corev1.Pod {
		pod := cl.targetPod(t, m)
		cl.bind(t, pod, "node-b")
		cl.kubelet(t, pod, ready)
		cl.waitPhase(t, m, virtv1.MigrationPreparingTarget)
		return pod
	}
	ended := func(m *virtv1.VirtualMachineInstanceMigration, v *virtv1.VirtualMachineInstance, pod *corev1.Pod, reason string) {
		t.Helper()
		got := cl.waitPhase(t, m, virtv1.MigrationFailed)
		assert.Assert(t, got.Status.MigrationState != nil && got.Status.MigrationState.FailureReason == reason,
			"failure reason: %+v, want %q", got.Status.MigrationState, reason)
		ms := cl.vmi(t, v).Status.MigrationState
		assert.Assert(t, ms != nil && ms.MigrationUID == got.UID && ms.Completed && ms.Failed && ms.FailureReason == reason && ms.StartTimestamp == nil,
			"VMI migrationState %+v", ms)
		eventually(t, "target pod "+pod.Name+" deleted", func() (bool, string) {
			p := &corev1.Pod{}
			err := cl.c.Get(ctx, client.ObjectKeyFromObject(pod), p)
			if apierrors.IsNotFound(err) || (err == nil && p.DeletionTimestamp != nil) {
				return true, ""
			}
			return false, fmt.Sprintf("%v, deletionTimestamp %v", err, p.DeletionTimestamp)
		})
	}

	// The target's handler is dead: PreparingTarget never ends.
	pod1 := toReady(m1)
	ended(m1, a1, pod1, "the handler of the target node node-b did not prepare the target within 2s")

	// Its slot is free: m2 goes on, and its target is prepared, but the
	// source's handler is dead: TargetReady never ends.
	cl.waitPhase(t, m2, virtv1.MigrationScheduling)
	pod2 := toReady(m2)
	cl.handler(t, a2, func(st *virtv1.VirtualMachineInstanceStatus) { st.MigrationState.TargetNodeAddress = "10.0.0.2" })
	cl.waitPhase(t, m2, virtv1.MigrationTargetReady)
	ended(m2, a2, pod2, "the handler of the source node node-a did not start the migration within 2s")
}

// stateVMI is a running VMI with a persistent vTPM on node-a, its
// backend-storage claim (named in its volume status) and a default
// storage class "state"; it returns the VMI and its claim's name.
func (cl *cluster) stateVMI(t *testing.T, ns string) (*virtv1.VirtualMachineInstance, string) {
	t.Helper()
	ctx := context.Background()
	class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "state",
		Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}}, Provisioner: "example.com/state"}
	if err := cl.c.Create(ctx, class); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	yes := true
	v := &virtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "vmi1", Namespace: ns},
		Spec: virtv1.VirtualMachineInstanceSpec{Domain: virtv1.DomainSpec{
			Resources: virtv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}},
			Devices:   virtv1.Devices{TPM: &virtv1.TPMDevice{Persistent: &yes}},
		}},
	}
	assert.NilError(t, cl.c.Create(ctx, v))
	source := backendstorage.Claim(v, "state", corev1.ReadWriteOnce)
	assert.NilError(t, cl.c.Create(ctx, source))
	pod, err := vmi.RenderPod(v, vmi.PodOptions{LauncherImage: "virtkit/virt-launcher:test", Emulation: true, StateClaim: source.Name})
	assert.NilError(t, err)
	pod.Spec.NodeName = "node-a"
	assert.NilError(t, cl.c.Create(ctx, pod))
	v.Status = virtv1.VirtualMachineInstanceStatus{Phase: virtv1.Running, NodeName: "node-a",
		Conditions: []virtv1.VirtualMachineInstanceCondition{{Type: virtv1.VirtualMachineInstanceIsMigratable, Status: corev1.ConditionTrue}}}
	backendstorage.SetVolumeStatus(&v.Status, source.Name)
	assert.NilError(t, cl.c.Status().Update(ctx, v))
	return v, source.Name
}

// runTo plays the scheduler, the kubelet and both handlers through a
// migration that succeeds, from Scheduling, and returns it succeeded.
func (cl *cluster) runTo(t *testing.T, v *virtv1.VirtualMachineInstance, m *virtv1.VirtualMachineInstanceMigration, pod *corev1.Pod) *virtv1.VirtualMachineInstanceMigration {
	t.Helper()
	cl.bind(t, pod, "node-b")
	cl.waitPhase(t, m, virtv1.MigrationScheduled)
	eventually(t, "the target node on the VMI", func() (bool, string) {
		ms := cl.vmi(t, v).Status.MigrationState
		return ms.TargetNode == "node-b", ms.TargetNode
	})
	cl.kubelet(t, pod, ready)
	cl.waitPhase(t, m, virtv1.MigrationPreparingTarget)
	cl.handler(t, v, func(st *virtv1.VirtualMachineInstanceStatus) { st.MigrationState.TargetNodeAddress = "node-b" })
	cl.waitPhase(t, m, virtv1.MigrationTargetReady)
	now := metav1.Now()
	cl.handler(t, v, func(st *virtv1.VirtualMachineInstanceStatus) { st.MigrationState.StartTimestamp = &now })
	cl.waitPhase(t, m, virtv1.MigrationRunning)
	cl.handler(t, v, func(st *virtv1.VirtualMachineInstanceStatus) {
		st.NodeName, st.MigrationState.Completed, st.MigrationState.EndTimestamp = "node-b", true, &now
	})
	return cl.waitPhase(t, m, virtv1.MigrationSucceeded)
}

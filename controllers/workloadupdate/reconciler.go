package workloadupdate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/virtkit/virtkit/controllers/events"
	"github.com/virtkit/virtkit/controllers/vmi"
	"github.com/virtkit/virtkit/virt/clusterconfig"
	"github.com/virtkit/virtkit/virt/migrate"
)

// MigrationGenerateName is the name prefix of the migrations the
// controller creates, KubeVirt's; they carry
// virtv1.WorkloadUpdateMigrationAnnotation.
const MigrationGenerateName = "kubevirt-workload-update-"

// RecheckAfter is how long the controller waits before it looks again
// while outdated VMIs are left, KubeVirt's interval.
const RecheckAfter = 30 * time.Second

// Event reasons on the VMIs it acts on, KubeVirt's.
const (
	ReasonSuccessfulCreate = "SuccessfulCreate"
	ReasonFailedCreate     = "FailedCreate"
	ReasonSuccessfulEvict  = "SuccessfulEvict"
	ReasonFailedEvict      = "FailedEvict"
	// ReasonSuccessfulChangeAbortion and ReasonFailedChangeAbortion are
	// Normal events, as KubeVirt's, about the cancelled migration's VMI.
	ReasonSuccessfulChangeAbortion = "SuccessfulChangeAbortion"
	ReasonFailedChangeAbortion     = "FailedChangeAbortion"
)

// Reconciler is the workload update controller. It keeps one piece of
// state, the time of its last eviction batch; run one per cluster (under
// the controllers' leader election).
type Reconciler struct {
	client    client.Client
	reader    client.Reader
	recorder  events.Recorder
	clock     clock.PassiveClock
	namespace string
	image     func(*virtv1.KubeVirt) string

	mu        sync.Mutex
	lastBatch time.Time
}

// Option changes a Reconciler.
type Option func(*Reconciler)

// WithClient sets the client the controller reads VMIs and pods through
// (a cache) and writes with, and the uncached reader it reads the KubeVirt
// CR and the migrations with. SetupWithManager uses the manager's unless
// set.
func WithClient(c client.Client, uncached client.Reader) Option {
	return func(r *Reconciler) { r.client, r.reader = c, uncached }
}

// WithEventRecorder sets where the Normal and Warning events about the VMIs
// it moves go. SetupWithManager uses the manager's unless set.
func WithEventRecorder(rec events.Recorder) Option { return func(r *Reconciler) { r.recorder = rec } }

// WithClock sets the clock of the eviction batches (default the real one).
func WithClock(c clock.PassiveClock) Option { return func(r *Reconciler) { r.clock = c } }

// New returns the controller. kubevirtNamespace ("" is
// clusterconfig.DefaultNamespace) holds the KubeVirt CR; launcherImage
// says which launcher image new pods get under a KubeVirt CR (the
// controllers' configuration with the CR applied), so that one read of the
// CR serves a whole look.
func New(kubevirtNamespace string, launcherImage func(*virtv1.KubeVirt) string, opts ...Option) *Reconciler {
	r := &Reconciler{recorder: events.Discard(), clock: clock.RealClock{},
		namespace: clusterconfig.Namespace(kubevirtNamespace), image: launcherImage}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Reconcile looks at every VMI once and moves the outdated ones it may.
// The request is ignored: there is one installation.
func (r *Reconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	kv, err := clusterconfig.Get(ctx, r.reader, r.namespace)
	if err != nil || kv == nil {
		return ctrl.Result{}, err
	}
	// Not while virt-operator installs or updates the daemons. A CR no
	// operator manages (no phase: virt-local, or an SDK embedding) is
	// always settled.
	if kv.Status.Phase != "" && (kv.Status.Phase != virtv1.KubeVirtPhaseDeployed || kv.Status.ObservedDeploymentID != kv.Status.TargetDeploymentID) {
		return ctrl.Result{}, nil
	}
	image := r.image(kv)
	var mc *virtv1.MigrationConfiguration
	if c := clusterconfig.Configuration(kv); c != nil {
		mc = c.MigrationConfiguration
	}
	migCfg, err := migrate.ClusterConfig(mc)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("workload update: KubeVirt %s: %w", client.ObjectKeyFromObject(kv), err)
	}
	// The cache's objects themselves, not copies: a look reads every VMI
	// and launcher pod and changes none.
	var vmis virtv1.VirtualMachineInstanceList
	if err := r.client.List(ctx, &vmis, client.UnsafeDisableDeepCopy); err != nil {
		return ctrl.Result{}, fmt.Errorf("workload update: listing VirtualMachineInstances: %w", err)
	}
	// Uncached: a migration created by the last look must be seen.
	var migs virtv1.VirtualMachineInstanceMigrationList
	if err := r.reader.List(ctx, &migs); err != nil {
		return ctrl.Result{}, fmt.Errorf("workload update: listing migrations: %w", err)
	}
	stopping, err := r.stopping(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	strategy := StrategyOf(kv)
	now := r.clock.Now()
	r.mu.Lock()
	evictNow := !now.Before(r.lastBatch.Add(strategy.BatchInterval))
	r.mu.Unlock()
	plan := PlanFor(Inputs{LauncherImage: image, VMIs: vmis.Items, Migrations: migs.Items, Strategy: strategy,
		ParallelMigrations: int(migCfg.ParallelMigrationsPerCluster), EvictNow: evictNow, Stopping: stopping})

	if err := r.writeCount(ctx, kv, plan.Outdated); err != nil {
		return ctrl.Result{}, err
	}
	if len(plan.Evict) > 0 {
		r.mu.Lock()
		r.lastBatch = now
		r.mu.Unlock()
	}
	byKey := map[types.NamespacedName]*virtv1.VirtualMachineInstance{}
	for i := range vmis.Items {
		v := &vmis.Items[i]
		byKey[types.NamespacedName{Namespace: v.Namespace, Name: v.Name}] = v
	}
	var errs []error
	// Copies of the few acted on: the cache's objects stay untouched.
	for _, k := range plan.Migrate {
		errs = append(errs, r.migrate(ctx, byKey[k].DeepCopy()))
	}
	for _, k := range plan.Evict {
		errs = append(errs, r.evict(ctx, byKey[k].DeepCopy()))
	}
	migByKey := map[types.NamespacedName]*virtv1.VirtualMachineInstanceMigration{}
	for i := range migs.Items {
		m := &migs.Items[i]
		migByKey[types.NamespacedName{Namespace: m.Namespace, Name: m.Name}] = m
	}
	for _, k := range plan.Abort {
		m := migByKey[k]
		errs = append(errs, r.abort(ctx, byKey[types.NamespacedName{Namespace: m.Namespace, Name: m.Spec.VMIName}].DeepCopy(), m))
	}
	res := ctrl.Result{}
	if plan.Waiting {
		res.RequeueAfter = RecheckAfter
	}
	return res, errors.Join(errs...)
}

// stopping returns the UIDs of the VMIs whose launcher pod is being
// deleted.
func (r *Reconciler) stopping(ctx context.Context) (map[types.UID]bool, error) {
	var pods corev1.PodList
	if err := r.client.List(ctx, &pods, client.MatchingLabels{virtv1.AppLabel: vmi.LauncherLabelValue}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("workload update: listing launcher pods: %w", err)
	}
	out := map[types.UID]bool{}
	for _, p := range pods.Items {
		if uid := p.Labels[virtv1.CreatedByLabel]; p.DeletionTimestamp != nil && uid != "" {
			out[types.UID(uid)] = true
		}
	}
	return out, nil
}

// writeCount sets the KubeVirt CR's status.outdatedVirtualMachineInstanceWorkloads
// to n when it says otherwise.
func (r *Reconciler) writeCount(ctx context.Context, kv *virtv1.KubeVirt, n int) error {
	if cur := kv.Status.OutdatedVirtualMachineInstanceWorkloads; cur != nil && *cur == n {
		return nil
	}
	upd := kv.DeepCopy()
	upd.Status.OutdatedVirtualMachineInstanceWorkloads = &n
	if err := r.client.Status().Patch(ctx, upd, client.MergeFrom(kv)); err != nil {
		return fmt.Errorf("workload update: KubeVirt %s: status.outdatedVirtualMachineInstanceWorkloads: %w", client.ObjectKeyFromObject(kv), err)
	}
	return nil
}

// migrate creates a live migration of v onto a launcher of the image in
// force (the target pod is rendered as any new pod is).
func (r *Reconciler) migrate(ctx context.Context, v *virtv1.VirtualMachineInstance) error {
	prio := virtv1.PrioritySystemCritical
	mig := &virtv1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{GenerateName: MigrationGenerateName, Namespace: v.Namespace,
			Annotations: map[string]string{virtv1.WorkloadUpdateMigrationAnnotation: ""}},
		Spec: virtv1.VirtualMachineInstanceMigrationSpec{VMIName: v.Name, Priority: &prio},
	}
	if err := r.client.Create(ctx, mig); err != nil {
		r.recorder.Eventf(v, corev1.EventTypeWarning, ReasonFailedCreate, "Error creating a Migration for automated workload update: %v", err)
		return fmt.Errorf("workload update: VirtualMachineInstance %s/%s: creating its migration: %w", v.Namespace, v.Name, err)
	}
	logf.FromContext(ctx).Info("workload update migration created", "vmi", client.ObjectKeyFromObject(v), "migration", mig.Name)
	r.recorder.Eventf(v, corev1.EventTypeNormal, ReasonSuccessfulCreate, "Created Migration %s for automated workload update", mig.Name)
	return nil
}

// abort deletes m, a workload update migration of v that is no longer
// needed; deleting a migration cancels it.
func (r *Reconciler) abort(ctx context.Context, v *virtv1.VirtualMachineInstance, m *virtv1.VirtualMachineInstanceMigration) error {
	err := r.client.Delete(ctx, m, client.Preconditions{UID: &m.UID})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		r.recorder.Eventf(v, corev1.EventTypeNormal, ReasonFailedChangeAbortion, "Failed to abort change for vmi: %s: %v", v.Name, err)
		return fmt.Errorf("workload update: VirtualMachineInstance %s/%s: deleting migration %s: %w", v.Namespace, v.Name, m.Name, err)
	}
	logf.FromContext(ctx).Info("workload update migration aborted", "vmi", client.ObjectKeyFromObject(v), "migration", m.Name)
	r.recorder.Eventf(v, corev1.EventTypeNormal, ReasonSuccessfulChangeAbortion, "Aborted change for vmi: %s", v.Name)
	return nil
}

// evict asks the apiserver to evict v's launcher pod, through the eviction
// API, so that disruption budgets and virt-api's eviction webhook apply.
func (r *Reconciler) evict(ctx context.Context, v *virtv1.VirtualMachineInstance) error {
	var pods corev1.PodList
	if err := r.client.List(ctx, &pods, client.InNamespace(v.Namespace),
		client.MatchingLabels{virtv1.CreatedByLabel: string(v.UID)}); err != nil {
		return fmt.Errorf("workload update: VirtualMachineInstance %s/%s: listing its pods: %w", v.Namespace, v.Name, err)
	}
	var pod *corev1.Pod
	for i := range pods.Items {
		if p := &pods.Items[i]; p.DeletionTimestamp == nil && vmi.IsCurrentPod(v, p) {
			pod = p
		}
	}
	if pod == nil {
		r.recorder.Eventf(v, corev1.EventTypeWarning, ReasonFailedEvict, "Error detecting active pod for VMI during workload update: none found")
		return nil // gone already: the VMI ends
	}
	err := r.client.SubResource("eviction").Create(ctx, pod, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace}})
	if err != nil && !apierrors.IsNotFound(err) {
		r.recorder.Eventf(v, corev1.EventTypeWarning, ReasonFailedEvict, "Error deleting VMI during automated workload update: %v", err)
		return fmt.Errorf("workload update: VirtualMachineInstance %s/%s: evicting pod %s: %w", v.Namespace, v.Name, pod.Name, err)
	}
	logf.FromContext(ctx).Info("workload update eviction", "vmi", client.ObjectKeyFromObject(v), "pod", pod.Name)
	r.recorder.Eventf(v, corev1.EventTypeNormal, ReasonSuccessfulEvict, "Initiated eviction of VMI as part of automated workload update")
	return nil
}

package snapshot

import (
	"context"
	"errors"
	"fmt"
	"time"

	volumesnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	virtv1 "kubevirt.io/api/core/v1"
	vmsnapshotv1 "kubevirt.io/api/snapshot/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/virtkit/virtkit/controllers/events"
	"github.com/virtkit/virtkit/virt/storage/backendstorage"
	"github.com/virtkit/virtkit/virt/storage/snapshot"
)

// Events on snapshots and their contents, with KubeVirt's reasons.
const (
	ReasonContentCreated        = "SuccessfulVirtualMachineSnapshotContentCreate"
	ReasonVolumeSnapshotCreated = "SuccessfulVolumeSnapshotCreate"
	ReasonVolumeSnapshotMissing = "VolumeSnapshotMissing"
	// ReasonSnapshotFailed is virtkit's: a snapshot that cannot be taken.
	ReasonSnapshotFailed = "VirtualMachineSnapshotFailed"
)

// retryInterval is how soon a snapshot that waits (for its source's lock,
// its claims, its VolumeSnapshots) is looked at again.
const retryInterval = 5 * time.Second

// deadlineExceeded is the Failure condition's reason at the deadline, as
// KubeVirt words it.
const deadlineExceeded = "snapshot deadline exceeded"

// SnapshotReconciler is the VirtualMachineSnapshot controller.
type SnapshotReconciler struct{ base }

// NewSnapshotReconciler returns a snapshot reconciler with opts applied.
func NewSnapshotReconciler(opts ...Option) *SnapshotReconciler {
	return &SnapshotReconciler{newBase(opts)}
}

// SetupWithManager registers the reconciler with mgr: it watches
// snapshots, their contents and the VolumeSnapshots of those.
func (r *SnapshotReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.client == nil {
		r.client = mgr.GetClient()
	}
	r.recorder = events.OrManager(r.recorder, mgr, "virt-controller")
	return ctrl.NewControllerManagedBy(mgr).
		Named("virtualmachinesnapshot").
		For(&vmsnapshotv1.VirtualMachineSnapshot{}).
		Watches(&vmsnapshotv1.VirtualMachineSnapshotContent{}, handler.EnqueueRequestsFromMapFunc(snapshotOfContent)).
		Watches(&volumesnapshotv1.VolumeSnapshot{}, handler.EnqueueRequestsFromMapFunc(r.snapshotOfVolumeSnapshot)).
		Complete(r)
}

func snapshotOfContent(_ context.Context, obj client.Object) []reconcile.Request {
	c, ok := obj.(*vmsnapshotv1.VirtualMachineSnapshotContent)
	if !ok || c.Spec.VirtualMachineSnapshotName == nil {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: c.Namespace, Name: *c.Spec.VirtualMachineSnapshotName}}}
}

func (r *SnapshotReconciler) snapshotOfVolumeSnapshot(ctx context.Context, obj client.Object) []reconcile.Request {
	ref := metav1.GetControllerOfNoCopy(obj)
	if ref == nil || ref.Kind != "VirtualMachineSnapshotContent" {
		return nil
	}
	c := &vmsnapshotv1.VirtualMachineSnapshotContent{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: obj.GetNamespace(), Name: ref.Name}, c); err != nil {
		return nil
	}
	return snapshotOfContent(ctx, c)
}

// Reconcile takes a snapshot one step further and writes its status.
func (r *SnapshotReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	s := &vmsnapshotv1.VirtualMachineSnapshot{}
	if err := r.client.Get(ctx, req.NamespacedName, s); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	vm, vmi, err := r.source(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	content, err := r.content(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	if s.DeletionTimestamp != nil {
		r.thawUnfinished(ctx, s, vmi)
		return ctrl.Result{}, r.finalize(ctx, s, vm, content)
	}
	if !controllerutil.ContainsFinalizer(s, snapshot.SnapshotFinalizer) {
		controllerutil.AddFinalizer(s, snapshot.SnapshotFinalizer)
		if err := r.client.Update(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
	}
	next := s.DeepCopy()
	if next.Status == nil {
		next.Status = &vmsnapshotv1.VirtualMachineSnapshotStatus{ReadyToUse: ptr.To(false)}
	}
	st := next.Status
	now := metav1.NewTime(r.clock.Now().Truncate(time.Second))
	if st.Phase == vmsnapshotv1.Succeeded || st.Phase == vmsnapshotv1.Failed {
		// Done: the source goes free (again, if an earlier unlock failed).
		return ctrl.Result{}, r.unlock(ctx, vm, s.Name)
	}

	retry := time.Duration(0)
	wait, err := r.step(ctx, s, next, vm, vmi, content, now)
	var fail *failure
	switch {
	case errors.As(err, &fail):
		r.fail(next, fail.Error(), now)
		r.recorder.Eventf(s, corev1.EventTypeWarning, ReasonSnapshotFailed, "%s", fail.Error())
	case err != nil:
		return ctrl.Result{}, err
	case wait != "":
		retry = retryInterval
		st.Conditions = snapshot.SetCondition(st.Conditions, snapshot.Condition(vmsnapshotv1.ConditionProgressing, corev1.ConditionFalse, wait, now))
	case st.Phase == vmsnapshotv1.InProgress:
		retry = retryInterval
		st.Conditions = snapshot.SetCondition(st.Conditions, snapshot.Condition(vmsnapshotv1.ConditionProgressing, corev1.ConditionTrue, "Source locked and operation in progress", now))
	}
	if st.Phase == vmsnapshotv1.InProgress {
		if left := r.deadline(s).Sub(r.clock.Now()); left <= 0 {
			r.fail(next, deadlineExceeded, now)
		} else if left < retry {
			retry = max(left, time.Second)
		}
	}
	ready := ptr.Deref(st.ReadyToUse, false)
	readyCond := snapshot.Condition(vmsnapshotv1.ConditionReady, corev1.ConditionFalse, "Not ready", now)
	if ready {
		readyCond = snapshot.Condition(vmsnapshotv1.ConditionReady, corev1.ConditionTrue, "Ready", now)
	}
	st.Conditions = snapshot.SetCondition(st.Conditions, readyCond)
	if st.Phase == vmsnapshotv1.Failed {
		r.thawUnfinished(ctx, next, vmi)
	}
	if st.Phase == vmsnapshotv1.Failed && content != nil && !contentReady(content) {
		// An unready content is of no use: it goes, and its copies.
		if err := r.deleteContent(ctx, content); err != nil {
			return ctrl.Result{}, err
		}
	}
	if !equality.Semantic.DeepEqual(s.Status, next.Status) {
		if err := r.client.Status().Update(ctx, next); err != nil {
			return ctrl.Result{}, err
		}
	}
	if st.Phase == vmsnapshotv1.Succeeded || st.Phase == vmsnapshotv1.Failed {
		return ctrl.Result{}, r.unlock(ctx, vm, s.Name)
	}
	return ctrl.Result{RequeueAfter: retry}, nil
}

// thawUnfinished thaws the guest of a snapshot that froze it and ends (fails
// or goes) before its volumes were cut; a failure is only logged, since the
// guest thaws by itself at the snapshot's deadline.
func (r *SnapshotReconciler) thawUnfinished(ctx context.Context, s *vmsnapshotv1.VirtualMachineSnapshot, vmi *virtv1.VirtualMachineInstance) {
	if r.freezer == nil || !snapshot.Freezes(s.Status) || s.Status.CreationTime != nil || vmi == nil || vmi.Status.Phase != virtv1.Running {
		return
	}
	if err := r.freezer.Unfreeze(ctx, vmi.Namespace, vmi.Name); err != nil {
		logf.FromContext(ctx).Error(err, "thawing the guest of an unfinished snapshot", "vmi", vmi.Namespace+"/"+vmi.Name)
	}
}

// failure is an error that fails a snapshot or a restore for good.
type failure struct{ msg string }

func (f *failure) Error() string { return f.msg }

func failed(format string, args ...any) error { return &failure{msg: fmt.Sprintf(format, args...)} }

// fail makes next Failed with msg.
func (r *SnapshotReconciler) fail(next *vmsnapshotv1.VirtualMachineSnapshot, msg string, now metav1.Time) {
	st := next.Status
	st.Phase = vmsnapshotv1.Failed
	st.ReadyToUse = ptr.To(false)
	if st.Error == nil || ptr.Deref(st.Error.Message, "") != msg {
		st.Error = &vmsnapshotv1.Error{Time: &now, Message: ptr.To(msg)}
	}
	st.Conditions = snapshot.SetCondition(st.Conditions, snapshot.Condition(vmsnapshotv1.ConditionFailure, corev1.ConditionTrue, msg, now))
	st.Conditions = snapshot.SetCondition(st.Conditions, snapshot.Condition(vmsnapshotv1.ConditionProgressing, corev1.ConditionFalse, "Operation failed", now))
}

// deadline is when an unfinished snapshot fails: failureDeadline (5
// minutes when unset; none when 0) after its creation.
func (r *SnapshotReconciler) deadline(s *vmsnapshotv1.VirtualMachineSnapshot) time.Time {
	d := time.Duration(snapshot.DefaultFailureDeadline) * time.Second
	if s.Spec.FailureDeadline != nil {
		if s.Spec.FailureDeadline.Duration == 0 {
			return time.Now().Add(24 * 365 * time.Hour)
		}
		d = s.Spec.FailureDeadline.Duration
	}
	return s.CreationTimestamp.Add(d)
}

// step does what the snapshot needs next and writes it into next's
// status. It returns why the snapshot waits ("" when it does not), or a
// *failure.
func (r *SnapshotReconciler) step(ctx context.Context, s, next *vmsnapshotv1.VirtualMachineSnapshot, vm *virtv1.VirtualMachine,
	vmi *virtv1.VirtualMachineInstance, content *vmsnapshotv1.VirtualMachineSnapshotContent, now metav1.Time) (string, error) {
	st := next.Status
	st.Phase = vmsnapshotv1.InProgress
	if s.Spec.Source.Kind != "VirtualMachine" {
		return "", failed("spec.source.kind: %q is not supported (only VirtualMachine)", s.Spec.Source.Kind)
	}
	if vm == nil {
		return "Source does not exist", nil
	}
	st.SourceUID = ptr.To(vm.UID)
	facts, err := r.facts(ctx, vm.Namespace)
	if err != nil {
		return "", err
	}
	if content == nil {
		plan, err := snapshot.PlanVolumes(vm, facts)
		if errors.Is(err, snapshot.ErrNotReady) {
			return "Source not locked: " + err.Error(), nil
		}
		if err != nil {
			return "", failed("VirtualMachine %s: %v", vm.Name, err)
		}
		var claims []string
		for _, v := range plan.Included {
			claims = append(claims, v.Claim)
		}
		online := vmi != nil && !vmi.IsFinal()
		if why, err := r.lock(ctx, vm, s.Name, online, claims); err != nil || why != "" {
			return why, err
		}
		r.indicate(st, vmi)
		content = snapshot.Content(s, vm, plan, facts.Claims)
		if err := r.client.Create(ctx, content); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("creating VirtualMachineSnapshotContent %s: %w", content.Name, err)
		}
		r.recorder.Eventf(s, corev1.EventTypeNormal, ReasonContentCreated, "Successfully created VirtualMachineSnapshotContent %s", content.Name)
		st.VirtualMachineSnapshotContentName = ptr.To(content.Name)
		return "", nil
	}
	st.VirtualMachineSnapshotContentName = ptr.To(content.Name)
	if s.Status == nil || s.Status.VirtualMachineSnapshotContentName == nil {
		// The content is made but the status that records it is not seen
		// (a cache behind, or a status write that failed): write it first,
		// so that the VolumeSnapshots, and whether the guest is frozen for
		// them, follow the indications the status says.
		if s.Status == nil || s.Status.SourceIndications == nil {
			r.indicate(st, vmi)
		}
		return "", nil
	}
	if err := r.syncVolumeSnapshots(ctx, s, vmi, content, facts, now); err != nil {
		return "", err
	}
	cst := ptr.Deref(content.Status, vmsnapshotv1.VirtualMachineSnapshotContentStatus{})
	st.CreationTime, st.ReadyToUse, st.Error = cst.CreationTime, cst.ReadyToUse, cst.Error
	if cst.CreationTime != nil {
		st.Phase = vmsnapshotv1.Succeeded
		st.Conditions = snapshot.SetCondition(st.Conditions, snapshot.Condition(vmsnapshotv1.ConditionProgressing, corev1.ConditionFalse, "Operation complete", now))
		st.SnapshotVolumes = volumeLists(content)
	}
	return "", nil
}

// indicate writes the indications of a snapshot of a VM whose instance is
// vmi (nil, or ended, when it does not run) into st.
func (r *SnapshotReconciler) indicate(st *vmsnapshotv1.VirtualMachineSnapshotStatus, vmi *virtv1.VirtualMachineInstance) {
	var running *virtv1.VirtualMachineInstance
	if vmi != nil && !vmi.IsFinal() {
		running = vmi
	}
	// Both fields, as KubeVirt writes them: clients of older releases read
	// the deprecated one.
	//lint:ignore SA1019 KubeVirt still writes status.indications beside sourceIndications
	st.Indications, st.SourceIndications = snapshot.Indications(running, r.freezer != nil)
}

// volumeLists are the volumes of a content's VM it copied and left out,
// its backend storage among them (backendstorage.SnapshotVolumeName), as
// KubeVirt lists them.
func volumeLists(c *vmsnapshotv1.VirtualMachineSnapshotContent) *vmsnapshotv1.SnapshotVolumesLists {
	backed := map[string]bool{}
	for _, b := range c.Spec.VolumeBackups {
		backed[b.VolumeName] = true
	}
	l := &vmsnapshotv1.SnapshotVolumesLists{}
	if vm := c.Spec.Source.VirtualMachine; vm != nil && vm.Spec.Template != nil {
		var names []string
		for _, v := range vm.Spec.Template.Spec.Volumes {
			names = append(names, v.Name)
		}
		if backendstorage.Needed(&vm.Spec.Template.Spec) {
			names = append(names, backendstorage.SnapshotVolumeName(vm.Name))
		}
		for _, name := range names {
			if backed[name] {
				l.IncludedVolumes = append(l.IncludedVolumes, name)
			} else {
				l.ExcludedVolumes = append(l.ExcludedVolumes, name)
			}
		}
	}
	return l
}

// syncVolumeSnapshots makes the content's missing VolumeSnapshots (before
// it is created: one gone afterwards is reported missing) and writes the
// content's status from them. A snapshot that freezes (indication
// GuestAgent) freezes the running guest's file systems before it makes
// them, and thaws them once every one is cut (has a creation time); the
// guest thaws by itself at the snapshot's deadline, should this never
// come back.
func (r *SnapshotReconciler) syncVolumeSnapshots(ctx context.Context, s *vmsnapshotv1.VirtualMachineSnapshot, vmi *virtv1.VirtualMachineInstance,
	content *vmsnapshotv1.VirtualMachineSnapshotContent, facts snapshot.Facts, now metav1.Time) error {
	freezes := r.freezer != nil && snapshot.Freezes(s.Status) && vmi != nil && vmi.Status.Phase == virtv1.Running
	frozen := false
	next := content.DeepCopy()
	if next.Status == nil {
		next.Status = &vmsnapshotv1.VirtualMachineSnapshotContentStatus{}
	}
	created := next.Status.CreationTime != nil
	allCreated, allReady := true, true
	var statuses []vmsnapshotv1.VolumeSnapshotStatus
	var problem string
	for _, b := range content.Spec.VolumeBackups {
		if b.VolumeSnapshotName == nil {
			continue
		}
		vs := &volumesnapshotv1.VolumeSnapshot{}
		err := r.client.Get(ctx, client.ObjectKey{Namespace: content.Namespace, Name: *b.VolumeSnapshotName}, vs)
		switch {
		case apierrors.IsNotFound(err) && created:
			r.recorder.Eventf(content, corev1.EventTypeWarning, ReasonVolumeSnapshotMissing, "VolumeSnapshot %s no longer exists", *b.VolumeSnapshotName)
			problem = fmt.Sprintf("VolumeSnapshots (%s) missing", *b.VolumeSnapshotName)
			allCreated, allReady = false, false
			continue
		case apierrors.IsNotFound(err):
			class, cerr := snapshot.SnapshotClassFor(ptr.Deref(b.PersistentVolumeClaim.Spec.StorageClassName, ""), facts)
			if cerr != nil {
				return failed("volume %q: claim %q: %v", b.VolumeName, b.PersistentVolumeClaim.Name, cerr)
			}
			if freezes && !frozen {
				limit := max(r.deadline(s).Sub(r.clock.Now()), 30*time.Second)
				if err := r.freezer.Freeze(ctx, vmi.Namespace, vmi.Name, limit); err != nil {
					return fmt.Errorf("freezing the file systems of VirtualMachineInstance %s/%s: %w", vmi.Namespace, vmi.Name, err)
				}
				frozen = true
			}
			vs = snapshot.VolumeSnapshot(content, b, class)
			if err := r.client.Create(ctx, vs); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating VolumeSnapshot %s: %w", vs.Name, err)
			}
			r.recorder.Eventf(content, corev1.EventTypeNormal, ReasonVolumeSnapshotCreated, "Successfully created VolumeSnapshot %s", vs.Name)
		case err != nil:
			return err
		}
		s := vmsnapshotv1.VolumeSnapshotStatus{VolumeSnapshotName: vs.Name}
		if vst := vs.Status; vst != nil {
			s.ReadyToUse, s.CreationTime = vst.ReadyToUse, vst.CreationTime
			if vst.Error != nil {
				s.Error = &vmsnapshotv1.Error{Time: vst.Error.Time, Message: vst.Error.Message}
				if problem == "" && vst.Error.Message != nil {
					problem = fmt.Sprintf("VolumeSnapshot %s error: %s", vs.Name, *vst.Error.Message)
				}
			}
		}
		allCreated = allCreated && s.CreationTime != nil
		allReady = allReady && ptr.Deref(s.ReadyToUse, false)
		statuses = append(statuses, s)
	}
	st := next.Status
	if allCreated && st.CreationTime == nil {
		if freezes {
			if err := r.freezer.Unfreeze(ctx, vmi.Namespace, vmi.Name); err != nil {
				return fmt.Errorf("thawing the file systems of VirtualMachineInstance %s/%s: %w", vmi.Namespace, vmi.Name, err)
			}
		}
		st.CreationTime = &now
	}
	st.ReadyToUse = ptr.To(allReady && problem == "")
	st.VolumeSnapshotStatus = statuses
	switch {
	case problem != "" && (st.Error == nil || ptr.Deref(st.Error.Message, "") != problem):
		st.Error = &vmsnapshotv1.Error{Time: &now, Message: ptr.To(problem)}
	case problem == "":
		st.Error = nil
	}
	if !equality.Semantic.DeepEqual(content.Status, next.Status) {
		if err := r.client.Status().Update(ctx, next); err != nil {
			return err
		}
		*content = *next
	}
	return nil
}

// facts reads what planning a snapshot of a VM in namespace needs.
func (b *base) facts(ctx context.Context, namespace string) (snapshot.Facts, error) {
	f := snapshot.Facts{Claims: map[string]*corev1.PersistentVolumeClaim{}, StorageClasses: map[string]*storagev1.StorageClass{}}
	var claims corev1.PersistentVolumeClaimList
	if err := b.client.List(ctx, &claims, client.InNamespace(namespace)); err != nil {
		return f, err
	}
	for i := range claims.Items {
		f.Claims[claims.Items[i].Name] = &claims.Items[i]
	}
	var classes storagev1.StorageClassList
	if err := b.client.List(ctx, &classes); err != nil {
		return f, err
	}
	for i := range classes.Items {
		f.StorageClasses[classes.Items[i].Name] = &classes.Items[i]
	}
	var snapClasses volumesnapshotv1.VolumeSnapshotClassList
	if err := b.client.List(ctx, &snapClasses); err != nil {
		return f, err
	}
	f.SnapshotClasses = snapClasses.Items
	return f, nil
}

// source is the snapshot's VM and its VMI (each nil when there is none).
func (r *SnapshotReconciler) source(ctx context.Context, s *vmsnapshotv1.VirtualMachineSnapshot) (*virtv1.VirtualMachine, *virtv1.VirtualMachineInstance, error) {
	key := client.ObjectKey{Namespace: s.Namespace, Name: s.Spec.Source.Name}
	vm := &virtv1.VirtualMachine{}
	if err := r.client.Get(ctx, key, vm); apierrors.IsNotFound(err) {
		return nil, nil, nil
	} else if err != nil {
		return nil, nil, err
	}
	vmi := &virtv1.VirtualMachineInstance{}
	if err := r.client.Get(ctx, key, vmi); apierrors.IsNotFound(err) {
		return vm, nil, nil
	} else if err != nil {
		return nil, nil, err
	}
	return vm, vmi, nil
}

// content is the snapshot's content, nil when there is none.
func (r *SnapshotReconciler) content(ctx context.Context, s *vmsnapshotv1.VirtualMachineSnapshot) (*vmsnapshotv1.VirtualMachineSnapshotContent, error) {
	name := snapshot.ContentName(s.UID)
	if s.Status != nil && s.Status.VirtualMachineSnapshotContentName != nil {
		name = *s.Status.VirtualMachineSnapshotContentName
	}
	c := &vmsnapshotv1.VirtualMachineSnapshotContent{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: name}, c); apierrors.IsNotFound(err) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	return c, nil
}

func contentReady(c *vmsnapshotv1.VirtualMachineSnapshotContent) bool {
	return c.Status != nil && ptr.Deref(c.Status.ReadyToUse, false)
}

// finalize lets a deleted snapshot go: its content is deleted (and with it
// its VolumeSnapshots) unless the deletion policy retains a ready one, its
// VM is unlocked, and its finalizer removed.
func (r *SnapshotReconciler) finalize(ctx context.Context, s *vmsnapshotv1.VirtualMachineSnapshot, vm *virtv1.VirtualMachine, content *vmsnapshotv1.VirtualMachineSnapshotContent) error {
	if content != nil {
		retain := s.Spec.DeletionPolicy != nil && *s.Spec.DeletionPolicy == vmsnapshotv1.VirtualMachineSnapshotContentRetain
		if retain && contentReady(content) {
			if err := r.releaseContent(ctx, content); err != nil {
				return err
			}
		} else if err := r.deleteContent(ctx, content); err != nil {
			return err
		}
	}
	if err := r.unlock(ctx, vm, s.Name); err != nil {
		return err
	}
	if controllerutil.RemoveFinalizer(s, snapshot.SnapshotFinalizer) {
		return client.IgnoreNotFound(r.client.Update(ctx, s))
	}
	return nil
}

// releaseContent takes the content's finalizer off.
func (r *SnapshotReconciler) releaseContent(ctx context.Context, c *vmsnapshotv1.VirtualMachineSnapshotContent) error {
	if controllerutil.RemoveFinalizer(c, snapshot.ContentFinalizer) {
		return client.IgnoreNotFound(r.client.Update(ctx, c))
	}
	return nil
}

// deleteContent deletes the content; its VolumeSnapshots, which it owns,
// follow.
func (r *SnapshotReconciler) deleteContent(ctx context.Context, c *vmsnapshotv1.VirtualMachineSnapshotContent) error {
	if err := r.releaseContent(ctx, c); err != nil {
		return err
	}
	if c.DeletionTimestamp != nil {
		return nil
	}
	return client.IgnoreNotFound(r.client.Delete(ctx, c, client.PropagationPolicy(metav1.DeletePropagationBackground)))
}

package operator

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/virtkit/virtkit/deploy"
)

// ownedKinds are the kinds the operator makes, in the order uninstalling
// deletes them, KubeVirt's: the CRDs first (their custom resources go with
// them), then the workloads, then what calls virt-api, then identities,
// Secrets and ConfigMaps.
var ownedKinds = []schema.GroupVersionKind{
	{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"},
	{Group: "apps", Version: "v1", Kind: "DaemonSet"},
	{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"},
	{Group: "apps", Version: "v1", Kind: "Deployment"},
	{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingWebhookConfiguration"},
	{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "MutatingWebhookConfiguration"},
	{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicyBinding"},
	{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicy"},
	{Group: "apiregistration.k8s.io", Version: "v1", Kind: "APIService"},
	{Group: "", Version: "v1", Kind: "Service"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"},
	{Group: "", Version: "v1", Kind: "ServiceAccount"},
	{Group: "", Version: "v1", Kind: "Secret"},
	{Group: "", Version: "v1", Kind: "ConfigMap"},
}

// Workloads that block an uninstall under BlockUninstallIfWorkloadsExist,
// in the order KubeVirt checks them, with the names its message uses.
var blockingWorkloads = []struct {
	list client.ObjectList
	name string
}{
	{&virtv1.VirtualMachineInstanceList{}, "Virtual Machine Instances"},
	{&virtv1.VirtualMachineList{}, "Virtual Machines"},
	{&virtv1.VirtualMachineInstanceReplicaSetList{}, "Virtual Machine Instance Replica Sets"},
}

// uninstall removes a step more of the installation of kv, which is being
// deleted, and lets it go once nothing is left.
func (r *Reconciler) uninstall(ctx context.Context, kv *virtv1.KubeVirt, obs Observation) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(kv, Finalizer) {
		return ctrl.Result{}, nil
	}
	obs.Deleting = true
	wait := ctrl.Result{RequeueAfter: r.retry}
	if kv.Spec.UninstallStrategy == virtv1.KubeVirtUninstallStrategyBlockUninstallIfWorkloadsExist {
		what, err := blockingWorkload(ctx, r.reader)
		if err != nil {
			return ctrl.Result{}, err
		}
		if what != "" {
			obs.Failed = blockedError{what}
			return wait, r.writeStatus(ctx, kv, obs)
		}
	}
	if err := r.writeStatus(ctx, kv, obs); err != nil {
		return ctrl.Result{}, err
	}
	log := logf.FromContext(ctx)
	for _, gvk := range ownedKinds {
		left, err := r.deleteAll(ctx, gvk)
		if err != nil {
			return ctrl.Result{}, err
		}
		if len(left) > 0 {
			log.V(1).Info("uninstalling: waiting for objects to go", "kind", gvk.Kind, "left", left)
			return wait, nil
		}
	}
	if n, err := r.daemonPods(ctx); err != nil || n > 0 {
		return wait, err
	}
	if err := r.unlabelNodes(ctx); err != nil {
		return ctrl.Result{}, err
	}
	obs.Deleted = true
	if err := r.writeStatus(ctx, kv, obs); err != nil {
		return ctrl.Result{}, err
	}
	orig := kv.DeepCopy()
	controllerutil.RemoveFinalizer(kv, Finalizer)
	if err := r.client.Patch(ctx, kv, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	log.Info("uninstalled", "kubevirt", client.ObjectKeyFromObject(kv))
	return ctrl.Result{}, nil
}

// blockedError is an uninstall held by workloads, with KubeVirt's message.
type blockedError struct{ what string }

func (e blockedError) Error() string {
	return "Rejecting the uninstall request, since there are still " + e.what + " present. " +
		"Either delete all KubeVirt related workloads or change the uninstall strategy before uninstalling KubeVirt."
}

// blockingWorkload names the first kind of blockingWorkloads that has
// objects anywhere, or "": the rule both the uninstall and the deletion
// webhook apply.
func blockingWorkload(ctx context.Context, r client.Reader) (string, error) {
	for _, w := range blockingWorkloads {
		list := w.list.DeepCopyObject().(client.ObjectList)
		if err := r.List(ctx, list, client.Limit(1)); err != nil {
			if apierrors.IsNotFound(err) { // the CRD is gone already
				continue
			}
			return "", fmt.Errorf("listing %s: %w", w.name, err)
		}
		if meta.LenList(list) > 0 {
			return w.name, nil
		}
	}
	return "", nil
}

// deleteAll deletes every object of gvk the operator made and names those
// that were still there.
func (r *Reconciler) deleteAll(ctx context.Context, gvk schema.GroupVersionKind) ([]string, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := r.client.List(ctx, list, client.MatchingLabels{ManagedByLabel: ManagedByValue}); err != nil {
		return nil, fmt.Errorf("listing %s: %w", gvk.Kind, err)
	}
	zero := int64(0)
	var left []string
	for i := range list.Items {
		o := &list.Items[i]
		o.SetGroupVersionKind(gvk)
		left = append(left, client.ObjectKeyFromObject(o).String())
		if o.DeletionTimestamp != nil {
			if gvk.Kind == "CustomResourceDefinition" {
				if err := r.nudgeCRD(ctx, o.Name); err != nil {
					return nil, err
				}
			}
			continue
		}
		if err := r.client.Delete(ctx, o, &client.DeleteOptions{GracePeriodSeconds: &zero}); client.IgnoreNotFound(err) != nil {
			return nil, fmt.Errorf("deleting %s %s: %w", gvk.Kind, client.ObjectKeyFromObject(o), err)
		}
	}
	return left, nil
}

// nudgeAnnotation is written on a CRD whose custom resources the apiserver
// failed to delete, to make it try again at once.
const nudgeAnnotation = "kubevirt.io/uninstall-retry"

// nudgeCRD makes the apiserver retry deleting the custom resources of a
// terminating CRD when its last attempt failed. It retries by itself, but
// with a back-off that grows to minutes, and an attempt fails while the
// resources' storage is being set up again (shortly after the CRD
// changed); any change of the CRD makes it retry at once.
func (r *Reconciler) nudgeCRD(ctx context.Context, name string) error {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := r.reader.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
		return client.IgnoreNotFound(err)
	}
	for _, c := range crd.Status.Conditions {
		if c.Type != apiextensionsv1.Terminating || c.Reason != "InstanceDeletionFailed" {
			continue
		}
		patch := client.MergeFrom(crd.DeepCopy())
		metav1.SetMetaDataAnnotation(&crd.ObjectMeta, nudgeAnnotation, r.clock.Now().UTC().Format(time.RFC3339Nano))
		if err := r.client.Patch(ctx, crd, patch); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("CustomResourceDefinition %s: asking to retry deleting its resources: %w", name, err)
		}
		logf.FromContext(ctx).Info("asked the apiserver to retry deleting a CRD's resources", "crd", name, "failure", c.Message)
	}
	return nil
}

// daemonPods counts the daemons' pods still in the namespace: a handler
// that still runs would label its node again.
func (r *Reconciler) daemonPods(ctx context.Context) (int, error) {
	pods := &metav1.PartialObjectMetadataList{}
	pods.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	if err := r.reader.List(ctx, pods, client.InNamespace(r.settings.Namespace), client.HasLabels{virtv1.AppLabel}); err != nil {
		return 0, fmt.Errorf("listing the daemons' pods: %w", err)
	}
	n := 0
	for _, p := range pods.Items {
		switch p.Labels[virtv1.AppLabel] {
		case deploy.APIName, deploy.ControllerName, deploy.HandlerName:
			n++
		}
	}
	return n, nil
}

// unlabelNodes removes from every node the labels and annotations of the
// kubevirt.io domain and its subdomains, which the handlers set.
func (r *Reconciler) unlabelNodes(ctx context.Context) error {
	nodes := &corev1.NodeList{}
	if err := r.reader.List(ctx, nodes); err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		orig := n.DeepCopy()
		labelled, annotated := dropKubeVirtKeys(n.Labels), dropKubeVirtKeys(n.Annotations)
		if !labelled && !annotated {
			continue
		}
		if err := r.client.Patch(ctx, n, client.MergeFrom(orig)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("node %s: removing kubevirt.io labels: %w", n.Name, err)
		}
	}
	return nil
}

// dropKubeVirtKeys deletes the keys of m whose prefix is kubevirt.io or a
// subdomain of it, and reports whether it deleted any.
func dropKubeVirtKeys(m map[string]string) bool {
	changed := false
	for k := range m {
		prefix, _, ok := strings.Cut(k, "/")
		if ok && (prefix == "kubevirt.io" || strings.HasSuffix(prefix, ".kubevirt.io")) {
			delete(m, k)
			changed = true
		}
	}
	return changed
}

package e2e

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"gotest.tools/v3/assert"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/virtkit/virtkit/deploy"
	"github.com/virtkit/virtkit/deploy/certs"
	"github.com/virtkit/virtkit/internal/localcluster"
	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/local/cluster"
	"github.com/virtkit/virtkit/operator"
	"github.com/virtkit/virtkit/virt/devices"
)

// virtkit installed on virt-local's real node as a cluster operator
// installs KubeVirt: the operator's release manifest, then a KubeVirt CR,
// both as files applied as `kubectl apply -f` would. The CR reaches
// Deployed and Available with the daemons as pods from the built images;
// the example VM runs in a launcher container and its console answers
// through the aggregated API; a claim's export serves from the real node
// (exportOnRealNode); a deleted DaemonSet and ClusterRole come
// back, and the guest's console answers again through the new handler; a
// feature gate and the cluster's eviction strategy changed in the CR act
// in virt-api with no daemon restarted; an
// upgrade to another image tag rolls the daemons while the CR stays
// Available and the guest beats, and the workload updater then moves the
// VM onto a launcher of the new version; the uninstall is refused while the VM exists and, once it is deleted,
// leaves nothing of virtkit (CRDs, webhooks, APIService, RBAC, node
// labels, pods) but the operator's manifest, whose deletion takes the
// rest; Down then finds the host as it was.
func TestOperatorOnRealNode(t *testing.T) {
	testenv.Integration(t)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	real := nodeName("op")
	repo, err := testenv.RepoRoot()
	assert.NilError(t, err)
	c, err := localcluster.Start(ctx, localcluster.Options{Repo: repo, KubeletNode: real, Operator: true, DataPrefix: "vko-",
		Logger: testr.NewWithOptions(t, testr.Options{Verbosity: 0})})
	assert.NilError(t, err)
	stopped := false
	defer func() {
		if !stopped {
			assert.NilError(t, c.Stop(context.Background()))
		}
	}()
	w := worldOf(t, c)
	dir := c.Config().OperatorManifestDir()

	// Nothing of virtkit before the manifests.
	err = w.c.Get(ctx, client.ObjectKey{Name: "virtualmachines.kubevirt.io"}, &apiextensionsv1.CustomResourceDefinition{})
	assert.Assert(t, apierrors.IsNotFound(err), "a virtkit CRD before the install: %v", err)

	operatorObjs := applyManifest(ctx, t, w, filepath.Join(dir, deploy.OperatorManifestFile))
	// As `kubectl wait crd kubevirts.kubevirt.io --for condition=Established`.
	eventually(ctx, t, "the KubeVirt CRD established", func() (bool, string) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := w.c.Get(ctx, client.ObjectKey{Name: "kubevirts.kubevirt.io"}, crd); err != nil {
			return false, err.Error()
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				// And served in discovery, which the client maps kinds by
				// (kubectl would fail the same way a moment earlier).
				if _, err := w.c.RESTMapper().RESTMapping(schema.GroupKind{Group: virtv1.SchemeGroupVersion.Group, Kind: "KubeVirt"}, "v1"); err != nil {
					return false, err.Error()
				}
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", crd.Status.Conditions)
	})
	applyManifest(ctx, t, w, filepath.Join(dir, deploy.KubeVirtCRFile))
	key := client.ObjectKey{Namespace: cluster.Namespace, Name: "kubevirt"}
	waitAvailable(ctx, t, w, key)
	for _, name := range []string{deploy.OperatorName, deploy.HandlerName, deploy.APIName, deploy.ControllerName} {
		var pods corev1.PodList
		must(t, w.c.List(ctx, &pods, client.InNamespace(cluster.Namespace), client.MatchingLabels{virtv1.AppLabel: name}))
		assert.Equal(t, len(pods.Items), 1, "%s pods: %s", name, namespacePods(ctx, t, w))
		p := pods.Items[0]
		assert.Equal(t, p.Spec.NodeName, real)
		assert.Equal(t, p.Spec.Containers[0].Image, c.Registry()+"/virtkit/"+name+":"+cluster.ImageTag)
		assert.Assert(t, containerOf(p), "%s pod %s: %+v", name, p.Name, p.Status.ContainerStatuses)
	}
	// The handler asked for its node's migration certificate with its
	// pod's token, and the operator's signer granted it for that node.
	eventually(ctx, t, "the handler's migration certificate issued", func() (bool, string) {
		var csrs certv1.CertificateSigningRequestList
		must(t, w.c.List(ctx, &csrs))
		var seen []string
		for _, csr := range csrs.Items {
			if csr.Spec.SignerName != certs.NodeSigner {
				continue
			}
			seen = append(seen, fmt.Sprintf("%s by %s %v: %+v", csr.Name, csr.Spec.Username, csr.Spec.Extra, csr.Status.Conditions))
			block, _ := pem.Decode(csr.Status.Certificate)
			if block == nil {
				continue
			}
			cert, err := x509.ParseCertificate(block.Bytes)
			must(t, err)
			if node, err := certs.NodeOf(cert); err == nil && node == real {
				return true, ""
			}
		}
		return false, fmt.Sprintf("requests: %q", seen)
	})

	vm := w.readVM(t, "../../examples/manifests/vm-tiny.yaml")
	must(t, w.c.Create(ctx, vm))
	vmi := w.waitRunning(ctx, t, vm)
	assert.Equal(t, vmi.Status.NodeName, real)
	w.consoleShows(ctx, t, vmi, "VIRTKIT-HEARTBEAT")

	exportOnRealNode(ctx, t, w, c, real)

	// Live configuration: a feature gate, the cluster's eviction strategy
	// and useEmulation changed in the CR take effect in the daemons that
	// read them (virt-api's admission and its eviction webhook,
	// virt-controller's launcher pods), with no daemon restarted or rolled.
	// The node keeps emulating whatever the CR says (the operator's
	// --emulation): a VMI started while the CR asks for KVM waits for a
	// KVM device the node does not offer, as on a node without /dev/kvm.
	before := daemonPods(ctx, t, w)
	hostDisk := &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: vm.Namespace, Name: "host-disk"},
		Spec: *vm.Spec.Template.Spec.DeepCopy()}
	hostDisk.Spec.Volumes = append(hostDisk.Spec.Volumes, virtv1.Volume{Name: "host", VolumeSource: virtv1.VolumeSource{
		HostDisk: &virtv1.HostDisk{Path: "/var/lib/virtkit-e2e/disk.img", Type: virtv1.HostDiskExists}}})
	hostDisk.Spec.Domain.Devices.Disks = append(hostDisk.Spec.Domain.Devices.Disks, virtv1.Disk{Name: "host"})
	err = w.c.Create(ctx, hostDisk.DeepCopy(), client.DryRunAll)
	assert.ErrorContains(t, err, "HostDisk feature gate is not enabled")
	launcher := launcherPod(ctx, t, w, vmi)
	assert.NilError(t, evictDryRun(ctx, w, launcher), "a dry-run eviction of the launcher under the default eviction strategy")
	updateKubeVirt(ctx, t, w, key, func(kv *virtv1.KubeVirt) {
		if kv.Spec.Configuration.DeveloperConfiguration == nil {
			kv.Spec.Configuration.DeveloperConfiguration = &virtv1.DeveloperConfiguration{}
		}
		kv.Spec.Configuration.DeveloperConfiguration.FeatureGates = append(kv.Spec.Configuration.DeveloperConfiguration.FeatureGates, "HostDisk")
		liveMigrate := virtv1.EvictionStrategyLiveMigrate
		kv.Spec.Configuration.EvictionStrategy = &liveMigrate
		kv.Spec.Configuration.DeveloperConfiguration.UseEmulation = false
	})
	eventually(ctx, t, "a hostDisk VMI admitted and the launcher's eviction refused", func() (bool, string) {
		createErr := w.c.Create(ctx, hostDisk.DeepCopy(), client.DryRunAll)
		evictErr := evictDryRun(ctx, w, launcher)
		refused := apierrors.IsTooManyRequests(evictErr) && strings.Contains(evictErr.Error(), `admission webhook "pod-eviction.kubevirt.io"`)
		return createErr == nil && refused, fmt.Sprintf("hostDisk VMI: %v; eviction: %v", createErr, evictErr)
	})
	needsKVM := &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: vm.Namespace, Name: "needs-kvm"},
		Spec: *vm.Spec.Template.Spec.DeepCopy()}
	must(t, w.c.Create(ctx, needsKVM))
	eventually(ctx, t, "the KVM VMI's launcher pod unschedulable for want of devices.kubevirt.io/kvm", func() (bool, string) {
		var pods corev1.PodList
		must(t, w.c.List(ctx, &pods, client.InNamespace(needsKVM.Namespace), client.MatchingLabels{virtv1.CreatedByLabel: string(needsKVM.UID)}))
		if len(pods.Items) != 1 {
			return false, fmt.Sprintf("%d launcher pods", len(pods.Items))
		}
		p := pods.Items[0]
		if _, ok := p.Spec.Containers[0].Resources.Limits[devices.KVM]; !ok {
			return false, fmt.Sprintf("limits %v", p.Spec.Containers[0].Resources.Limits)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && strings.Contains(c.Message, "Insufficient "+string(devices.KVM)) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("pod %s: %+v", p.Status.Phase, p.Status.Conditions)
	})
	must(t, w.c.Delete(ctx, needsKVM))
	updateKubeVirt(ctx, t, w, key, func(kv *virtv1.KubeVirt) {
		kv.Spec.Configuration.EvictionStrategy = nil
		kv.Spec.Configuration.DeveloperConfiguration.UseEmulation = true
	})
	eventually(ctx, t, "the KVM VMI and its pod gone", func() (bool, string) {
		var pods corev1.PodList
		must(t, w.c.List(ctx, &pods, client.InNamespace(needsKVM.Namespace), client.MatchingLabels{virtv1.CreatedByLabel: string(needsKVM.UID)}))
		err := w.c.Get(ctx, client.ObjectKeyFromObject(needsKVM), &virtv1.VirtualMachineInstance{})
		return apierrors.IsNotFound(err) && len(pods.Items) == 0, fmt.Sprintf("VMI: %v; %d pods", err, len(pods.Items))
	})
	eventually(ctx, t, "the launcher's eviction allowed again", func() (bool, string) {
		err := evictDryRun(ctx, w, launcher)
		return err == nil, fmt.Sprint(err)
	})
	assert.DeepEqual(t, daemonPods(ctx, t, w), before)

	// Drift: the handler's DaemonSet and its ClusterRole deleted come back,
	// and the new handler serves the running guest's console.
	ds := &appsv1.DaemonSet{}
	must(t, w.c.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: deploy.HandlerName}, ds))
	must(t, w.c.Delete(ctx, ds))
	must(t, w.c.Delete(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: deploy.HandlerName}}))
	eventually(ctx, t, "virt-handler's DaemonSet and ClusterRole back, its pod ready", func() (bool, string) {
		back := &appsv1.DaemonSet{}
		if err := w.c.Get(ctx, client.ObjectKeyFromObject(ds), back); err != nil {
			return false, err.Error()
		}
		if err := w.c.Get(ctx, client.ObjectKey{Name: deploy.HandlerName}, &rbacv1.ClusterRole{}); err != nil {
			return false, "ClusterRole: " + err.Error()
		}
		return back.UID != ds.UID && operator.DaemonSetReady(back), fmt.Sprintf("DaemonSet %s, status %+v", back.UID, back.Status)
	})
	w.consoleShows(ctx, t, vmi, "VIRTKIT-HEARTBEAT")
	waitAvailable(ctx, t, w, key)

	// Upgrade: the CR asks for another tag (the same build pushed again
	// under it). The daemons roll, a pod at a time; the CR stays Available
	// and the guest beats throughout. The VMI is then counted outdated,
	// until the workload updater, told to Evict, moves it onto a launcher
	// of the new version (the VM starts it again there).
	const newTag = "upgrade"
	must(t, c.PushImages(ctx, newTag))
	serial := w.serialLog(ctx, t, vmi)
	beat, beatAt := lastHeartbeat(t, serial), time.Now()
	kv := &virtv1.KubeVirt{}
	updateKubeVirt(ctx, t, w, key, func(kv *virtv1.KubeVirt) { kv.Spec.ImageTag = newTag })
	eventually(ctx, t, "the daemons rolled to "+newTag+" and the CR Available on it", func() (bool, string) {
		if n := lastHeartbeat(t, serial); n > beat {
			beat, beatAt = n, time.Now()
		} else if time.Since(beatAt) > 20*time.Second {
			t.Fatalf("the guest stopped beating during the upgrade at heartbeat %d", beat)
		}
		if err := w.c.Get(ctx, key, kv); err != nil {
			return false, err.Error()
		}
		if c := kubeVirtCondition(kv, virtv1.KubeVirtConditionAvailable); c == nil || c.Status != corev1.ConditionTrue {
			t.Fatalf("the CR not Available during the upgrade: %+v", kv.Status.Conditions)
		}
		if kv.Status.Phase != virtv1.KubeVirtPhaseDeployed || kv.Status.ObservedKubeVirtVersion != newTag {
			return false, fmt.Sprintf("phase %s, observed %s; pods: %s", kv.Status.Phase, kv.Status.ObservedKubeVirtVersion, namespacePods(ctx, t, w))
		}
		for _, name := range []string{deploy.HandlerName, deploy.APIName, deploy.ControllerName} {
			var pods corev1.PodList
			must(t, w.c.List(ctx, &pods, client.InNamespace(cluster.Namespace), client.MatchingLabels{virtv1.AppLabel: name}))
			if len(pods.Items) != 1 || pods.Items[0].Spec.Containers[0].Image != c.Registry()+"/virtkit/"+name+":"+newTag || !containerOf(pods.Items[0]) {
				return false, name + " pods: " + namespacePods(ctx, t, w)
			}
		}
		return true, ""
	})
	eventually(ctx, t, "the VMI counted outdated", func() (bool, string) {
		must(t, w.c.Get(ctx, key, kv))
		n := kv.Status.OutdatedVirtualMachineInstanceWorkloads
		return n != nil && *n == 1, fmt.Sprint(n)
	})
	updateKubeVirt(ctx, t, w, key, func(kv *virtv1.KubeVirt) {
		kv.Spec.WorkloadUpdateStrategy.WorkloadUpdateMethods = []virtv1.WorkloadUpdateMethod{virtv1.WorkloadUpdateMethodEvict}
	})
	newLauncher := c.Registry() + "/virtkit/" + operator.ImageLauncher + ":" + newTag
	eventually(ctx, t, "the VM's VMI running on a launcher of "+newTag, func() (bool, string) {
		v := &virtv1.VirtualMachineInstance{}
		if err := w.c.Get(ctx, client.ObjectKeyFromObject(vm), v); err != nil {
			return false, err.Error()
		}
		ok := v.UID != vmi.UID && v.Status.Phase == virtv1.Running && v.Status.LauncherContainerImageVersion == newLauncher
		if ok {
			vmi = v
		}
		return ok, fmt.Sprintf("VMI %s %s on launcher %s", v.UID, v.Status.Phase, v.Status.LauncherContainerImageVersion)
	})
	eventually(ctx, t, "nothing counted outdated", func() (bool, string) {
		must(t, w.c.Get(ctx, key, kv))
		n := kv.Status.OutdatedVirtualMachineInstanceWorkloads
		return n != nil && *n == 0, fmt.Sprint(n)
	})
	w.consoleShows(ctx, t, vmi, "VIRTKIT-HEARTBEAT")

	// The uninstall is refused while the VM runs, then completes.
	must(t, w.c.Get(ctx, key, kv))
	err = w.c.Delete(ctx, kv)
	assert.ErrorContains(t, err, `admission webhook "`+operator.DeleteWebhookName+`" denied the request: `+
		"Rejecting the uninstall request, since there are still Virtual Machine Instances present.")
	w.deleteVM(ctx, t, vm)
	must(t, w.c.Delete(ctx, kv))
	eventually(ctx, t, "the KubeVirt CR gone", func() (bool, string) {
		err := w.c.Get(ctx, key, kv)
		return apierrors.IsNotFound(err), fmt.Sprintf("%v: phase %s, conditions %+v", err, kv.Status.Phase, kv.Status.Conditions)
	})
	assert.DeepEqual(t, virtkitLeft(ctx, t, w, real), []string(nil))
	var pods corev1.PodList
	must(t, w.c.List(ctx, &pods, client.InNamespace(cluster.Namespace)))
	for _, p := range pods.Items {
		assert.Equal(t, p.Labels[virtv1.AppLabel], deploy.OperatorName, "pod %s after the uninstall", p.Name)
	}

	// Deleting the operator's manifest takes the rest.
	for _, o := range slices.Backward(operatorObjs) {
		if err := w.c.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	eventually(ctx, t, "the namespace and the KubeVirt CRD gone", func() (bool, string) {
		nsErr := w.c.Get(ctx, client.ObjectKey{Name: cluster.Namespace}, &corev1.Namespace{})
		crdErr := w.c.Get(ctx, client.ObjectKey{Name: "kubevirts.kubevirt.io"}, &apiextensionsv1.CustomResourceDefinition{})
		return apierrors.IsNotFound(nsErr) && apierrors.IsNotFound(crdErr), fmt.Sprintf("namespace: %v, CRD: %v", nsErr, crdErr)
	})

	// Down fails unless the real node found the host as it recorded it.
	assert.NilError(t, c.Stop(ctx))
	stopped = true
}

// applyManifest creates every object of the YAML manifest at path, in
// order, as `kubectl apply -f` does on a fresh cluster, and returns them.
func applyManifest(ctx context.Context, t *testing.T, w *world, path string) []client.Object {
	t.Helper()
	b, err := os.ReadFile(path)
	must(t, err)
	var objs []client.Object
	for _, doc := range bytes.Split(b, []byte("---\n")) {
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		u := &unstructured.Unstructured{}
		must(t, yaml.Unmarshal(doc, &u.Object))
		must(t, w.c.Create(ctx, u))
		objs = append(objs, u)
	}
	return objs
}

// virtkitLeft names what of virtkit is left in the cluster besides the
// operator's manifest: CRDs but the KubeVirt CRD, webhook configurations,
// the APIService, objects the operator marked, and kubevirt.io labels and
// annotations on node.
func virtkitLeft(ctx context.Context, t *testing.T, w *world, node string) []string {
	t.Helper()
	var left []string
	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	must(t, w.c.List(ctx, crds))
	for _, c := range crds.Items {
		if strings.Contains(c.Spec.Group, "kubevirt.io") && c.Name != "kubevirts.kubevirt.io" {
			left = append(left, "CRD "+c.Name)
		}
	}
	vwcs := &admissionregistrationv1.ValidatingWebhookConfigurationList{}
	must(t, w.c.List(ctx, vwcs))
	for _, v := range vwcs.Items {
		left = append(left, "ValidatingWebhookConfiguration "+v.Name)
	}
	mwcs := &admissionregistrationv1.MutatingWebhookConfigurationList{}
	must(t, w.c.List(ctx, mwcs))
	for _, m := range mwcs.Items {
		left = append(left, "MutatingWebhookConfiguration "+m.Name)
	}
	apiService := &unstructured.Unstructured{}
	apiService.SetAPIVersion("apiregistration.k8s.io/v1")
	apiService.SetKind("APIService")
	if err := w.c.Get(ctx, client.ObjectKey{Name: "v1.subresources.kubevirt.io"}, apiService); !apierrors.IsNotFound(err) {
		left = append(left, fmt.Sprintf("APIService v1.subresources.kubevirt.io (%v)", err))
	}
	marked := client.MatchingLabels{operator.ManagedByLabel: operator.ManagedByValue}
	for _, gvk := range []schema.GroupVersionKind{rbacv1.SchemeGroupVersion.WithKind("ClusterRoleList"),
		rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBindingList"), corev1.SchemeGroupVersion.WithKind("ServiceList"),
		corev1.SchemeGroupVersion.WithKind("SecretList"), corev1.SchemeGroupVersion.WithKind("ServiceAccountList"),
		corev1.SchemeGroupVersion.WithKind("ConfigMapList"), appsv1.SchemeGroupVersion.WithKind("DeploymentList"),
		appsv1.SchemeGroupVersion.WithKind("DaemonSetList")} {
		l := &metav1.PartialObjectMetadataList{}
		l.SetGroupVersionKind(gvk)
		must(t, w.c.List(ctx, l, marked))
		for _, o := range l.Items {
			left = append(left, strings.TrimSuffix(gvk.Kind, "List")+" "+client.ObjectKeyFromObject(&o).String())
		}
	}
	n := &corev1.Node{}
	must(t, w.c.Get(ctx, client.ObjectKey{Name: node}, n))
	for _, m := range []map[string]string{n.Labels, n.Annotations} {
		for k := range m {
			if prefix, _, ok := strings.Cut(k, "/"); ok && strings.HasSuffix(prefix, "kubevirt.io") {
				left = append(left, "node "+node+": "+k)
			}
		}
	}
	return left
}

// daemonPods names each daemon's pods with their restart counts.
func daemonPods(ctx context.Context, t *testing.T, w *world) map[string]int32 {
	t.Helper()
	var pods corev1.PodList
	must(t, w.c.List(ctx, &pods, client.InNamespace(cluster.Namespace)))
	out := map[string]int32{}
	for _, p := range pods.Items {
		var restarts int32
		for _, s := range p.Status.ContainerStatuses {
			restarts += s.RestartCount
		}
		out[p.Name+" "+string(p.UID)] = restarts
	}
	return out
}

// launcherPod is the launcher pod of vmi.
func launcherPod(ctx context.Context, t *testing.T, w *world, vmi *virtv1.VirtualMachineInstance) *corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	must(t, w.c.List(ctx, &pods, client.InNamespace(vmi.Namespace), client.MatchingLabels{virtv1.CreatedByLabel: string(vmi.UID)}))
	assert.Equal(t, len(pods.Items), 1, "launcher pods of %s", vmi.Name)
	return &pods.Items[0]
}

// evictDryRun asks the apiserver to evict pod without doing it, as
// `kubectl drain --dry-run=server` does.
func evictDryRun(ctx context.Context, w *world, pod *corev1.Pod) error {
	return w.c.SubResource("eviction").Create(ctx, pod, &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name},
		DeleteOptions: &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}}, client.DryRunAll)
}

// updateKubeVirt changes the KubeVirt CR key with change, again on a
// conflict.
func updateKubeVirt(ctx context.Context, t *testing.T, w *world, key client.ObjectKey, change func(*virtv1.KubeVirt)) {
	t.Helper()
	must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		kv := &virtv1.KubeVirt{}
		if err := w.c.Get(ctx, key, kv); err != nil {
			return err
		}
		change(kv)
		return w.c.Update(ctx, kv)
	}))
}

// waitAvailable waits until the KubeVirt CR key is Deployed and Available.
func waitAvailable(ctx context.Context, t *testing.T, w *world, key client.ObjectKey) {
	t.Helper()
	eventually(ctx, t, "the KubeVirt CR Deployed and Available", func() (bool, string) {
		kv := &virtv1.KubeVirt{}
		if err := w.c.Get(ctx, key, kv); err != nil {
			return false, err.Error()
		}
		if c := kubeVirtCondition(kv, virtv1.KubeVirtConditionAvailable); c != nil && c.Status == corev1.ConditionTrue &&
			kv.Status.Phase == virtv1.KubeVirtPhaseDeployed {
			return true, ""
		}
		return false, fmt.Sprintf("phase %s, conditions %+v; pods: %s", kv.Status.Phase, kv.Status.Conditions, namespacePods(ctx, t, w))
	})
}

// kubeVirtCondition is kv's condition of type ct, or nil.
func kubeVirtCondition(kv *virtv1.KubeVirt, ct virtv1.KubeVirtConditionType) *virtv1.KubeVirtCondition {
	for i := range kv.Status.Conditions {
		if kv.Status.Conditions[i].Type == ct {
			return &kv.Status.Conditions[i]
		}
	}
	return nil
}

// namespacePods describes the pods of virtkit's namespace, for messages.
func namespacePods(ctx context.Context, t *testing.T, w *world) string {
	t.Helper()
	var pods corev1.PodList
	if err := w.c.List(ctx, &pods, client.InNamespace(cluster.Namespace)); err != nil {
		return err.Error()
	}
	var out []string
	for _, p := range pods.Items {
		out = append(out, fmt.Sprintf("%s %s %+v", p.Name, p.Status.Phase, p.Status.ContainerStatuses))
	}
	return strings.Join(out, "; ")
}

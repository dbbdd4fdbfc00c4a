package operator_test

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"gotest.tools/v3/assert"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/virtkit/virtkit/deploy"
	"github.com/virtkit/virtkit/deploy/certs"
	"github.com/virtkit/virtkit/internal/freeport"
	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/internal/testenv/kubeenv"
	"github.com/virtkit/virtkit/operator"
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	testenv.Main(m)
}

const ns = "kubevirt"

// start runs a real apiserver and the operator in a manager, with the
// permissions of the release manifest's ServiceAccount and nothing more
// (the apiserver authorizes with RBAC), its webhooks served on loopback
// where the apiserver calls them (Settings.WebhookURL). No
// controller-manager, scheduler or kubelet runs: the test plays the
// Deployment and DaemonSet controllers by writing their status.
func start(t *testing.T) client.Client {
	t.Helper()
	cp := kubeenv.ControlPlane(t)
	cl := cp.Client
	ctx := testenv.Within(t, 10*time.Second)
	manifest, err := deploy.OperatorObjects(deploy.Operator{Namespace: ns, Image: "quay.test/virtkit/virt-operator:v0"})
	assert.NilError(t, err)
	for _, o := range manifest {
		if _, ok := o.(*appsv1.Deployment); ok {
			continue // the operator runs here, in the test
		}
		if err := cl.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	asOperator := rest.CopyConfig(cp.Config)
	asOperator.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":" + deploy.OperatorServiceAccount,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}}
	skip := true
	mgr, err := ctrl.NewManager(asOperator, ctrl.Options{Scheme: cl.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0", Controller: config.Controller{SkipNameValidation: &skip}, Cache: operator.CacheOptions()})
	assert.NilError(t, err)
	port, err := freeport.Range(1)
	assert.NilError(t, err)
	r, err := operator.New(operator.Settings{Namespace: ns, Registry: "quay.test/virtkit", Tag: "v0", Version: "v0",
		WebhookURL: fmt.Sprintf("https://127.0.0.1:%d", port)}, operator.WithRetry(200*time.Millisecond))
	assert.NilError(t, err)
	assert.NilError(t, r.SetupWithManager(mgr))
	assert.NilError(t, operator.AddWebhook(mgr, ns, webhook.Options{Host: "127.0.0.1", Port: port}))
	run, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(run) }()
	t.Cleanup(func() {
		cancel()
		assert.Check(t, <-done)
	})
	return cl
}

// badRotation is a certificate rotation KubeVirt refuses: the CA renewed
// before it was made.
func badRotation() *virtv1.KubeVirtSelfSignConfiguration {
	return &virtv1.KubeVirtSelfSignConfiguration{
		CA: &virtv1.CertConfig{Duration: &metav1.Duration{Duration: 48 * time.Hour}, RenewBefore: &metav1.Duration{Duration: 72 * time.Hour}}}
}

func kubevirt(t *testing.T, cl client.Client, namespace string) *virtv1.KubeVirt {
	t.Helper()
	kv := &virtv1.KubeVirt{}
	if err := cl.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: "kubevirt"}, kv); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		t.Fatal(err)
	}
	return kv
}

func condition(kv *virtv1.KubeVirt, ct virtv1.KubeVirtConditionType) *virtv1.KubeVirtCondition {
	for i := range kv.Status.Conditions {
		if kv.Status.Conditions[i].Type == ct {
			return &kv.Status.Conditions[i]
		}
	}
	return nil
}

// hasCondition reports whether kv has ct with status s and a message
// containing msg, and describes kv's status otherwise.
func hasCondition(kv *virtv1.KubeVirt, ct virtv1.KubeVirtConditionType, s corev1.ConditionStatus, reason, msg string) (bool, string) {
	if kv == nil {
		return false, "no KubeVirt CR"
	}
	c := condition(kv, ct)
	if c != nil && c.Status == s && c.Reason == reason && strings.Contains(c.Message, msg) {
		return true, ""
	}
	return false, "phase " + string(kv.Status.Phase) + ", conditions " + describe(kv.Status.Conditions)
}

func describe(conds []virtv1.KubeVirtCondition) string {
	var out []string
	for _, c := range conds {
		out = append(out, string(c.Type)+"="+string(c.Status)+"/"+c.Reason+": "+c.Message)
	}
	return strings.Join(out, "; ")
}

// ready plays the workload controllers: every Deployment and DaemonSet of
// the namespace reports all its pods ready.
func ready(t *testing.T, cl client.Client) {
	t.Helper()
	ctx := context.Background()
	deps := &appsv1.DeploymentList{}
	assert.NilError(t, cl.List(ctx, deps, client.InNamespace(ns)))
	for _, d := range deps.Items {
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: *d.Spec.Replicas, UpdatedReplicas: *d.Spec.Replicas,
			ReadyReplicas: *d.Spec.Replicas, AvailableReplicas: *d.Spec.Replicas}
		assert.NilError(t, cl.Status().Update(ctx, &d))
	}
	dss := &appsv1.DaemonSetList{}
	assert.NilError(t, cl.List(ctx, dss, client.InNamespace(ns)))
	for _, ds := range dss.Items {
		ds.Status = appsv1.DaemonSetStatus{ObservedGeneration: ds.Generation, DesiredNumberScheduled: 1, CurrentNumberScheduled: 1,
			UpdatedNumberScheduled: 1, NumberReady: 1, NumberAvailable: 1}
		assert.NilError(t, cl.Status().Update(ctx, &ds))
	}
}

// One KubeVirt CR's life: Degraded while created with an invalid setting,
// then installed with certificates and KubeVirt's phases, kept in shape, a
// second CR, an invalid change and a blocked uninstall refused by its
// webhooks, uninstalled once no VM is left.
func TestOperator(t *testing.T) {
	cl := start(t)
	ctx := testenv.Within(t, 2*time.Minute)

	// A VM, and a node its handler labelled, before the operator installs
	// anything (no webhook is there to call yet).
	vm := &virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "vm1"},
		Spec: virtv1.VirtualMachineSpec{Template: &virtv1.VirtualMachineInstanceTemplateSpec{}}}
	assert.NilError(t, cl.Create(ctx, vm))
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{
		virtv1.NodeSchedulable: "true", "cpu-model.node.kubevirt.io/Haswell": "true", "team": "blue"}}}
	assert.NilError(t, cl.Create(ctx, node))

	kv := &virtv1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kubevirt"}, Spec: virtv1.KubeVirtSpec{
		ImageRegistry: "registry.test/virtkit", ImageTag: "v1",
		UninstallStrategy:           virtv1.KubeVirtUninstallStrategyBlockUninstallIfWorkloadsExist,
		CertificateRotationStrategy: virtv1.KubeVirtCertificateRotateStrategy{SelfSigned: badRotation()}}}
	assert.NilError(t, cl.Create(ctx, kv))

	t.Run("created invalid, it is Degraded naming the field, and nothing is installed", func(t *testing.T) {
		testenv.Eventually(ctx, t, "the CR Degraded", func() (bool, string) {
			return hasCondition(kubevirt(t, cl, ns), virtv1.KubeVirtConditionDegraded, corev1.ConditionTrue, operator.ReasonDeploymentFailed,
				"spec.certificateRotateStrategy.selfSigned.ca.renewBefore")
		})
		err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "virt-api"}, &appsv1.Deployment{})
		assert.Assert(t, apierrors.IsNotFound(err), "virt-api's Deployment: %v", err)
		err = cl.Get(ctx, client.ObjectKey{Name: operator.WebhookConfigurationName}, &admissionregistrationv1.ValidatingWebhookConfiguration{})
		assert.Assert(t, apierrors.IsNotFound(err), "the operator's webhooks: %v", err)
		// Nothing installed, no webhook to refuse the fix.
		kv := kubevirt(t, cl, ns)
		kv.Spec.CertificateRotationStrategy.SelfSigned = nil
		assert.NilError(t, cl.Update(ctx, kv))
	})

	t.Run("installs and reports Deploying", func(t *testing.T) {
		testenv.Eventually(ctx, t, "the CR Created and Deploying", func() (bool, string) {
			kv := kubevirt(t, cl, ns)
			if ok, s := hasCondition(kv, virtv1.KubeVirtConditionCreated, corev1.ConditionTrue, operator.ReasonAllResourcesCreate, operator.MessageCreated); !ok {
				return false, s
			}
			return hasCondition(kv, virtv1.KubeVirtConditionProgressing, corev1.ConditionTrue, operator.ReasonDeploying, "Deploying version v1 with registry registry.test/virtkit")
		})
		kv := kubevirt(t, cl, ns)
		assert.Equal(t, kv.Status.Phase, virtv1.KubeVirtPhaseDeploying)
		assert.Assert(t, strings.Contains(strings.Join(kv.Finalizers, ","), operator.Finalizer))
		assert.Equal(t, kv.Status.TargetKubeVirtVersion, "v1")
		assert.Equal(t, kv.Status.TargetKubeVirtRegistry, "registry.test/virtkit")

		d := &appsv1.Deployment{}
		assert.NilError(t, cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "virt-api"}, d))
		assert.Equal(t, d.Spec.Template.Spec.Containers[0].Image, "registry.test/virtkit/virt-api:v1")
		assert.Equal(t, d.Labels[operator.ManagedByLabel], operator.ManagedByValue)
		ds := &appsv1.DaemonSet{}
		assert.NilError(t, cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "virt-handler"}, ds))
		assert.Equal(t, ds.Spec.Template.Spec.Containers[0].Image, "registry.test/virtkit/virt-handler:v1")

		// virt-api's certificate is for its Service and chains to the
		// bundle the APIService carries.
		cm := &corev1.ConfigMap{}
		assert.NilError(t, cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: operator.ConfigMapCA}, cm))
		pool := x509.NewCertPool()
		assert.Assert(t, pool.AppendCertsFromPEM([]byte(cm.Data[operator.CABundleKey])))
		s := &corev1.Secret{}
		assert.NilError(t, cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: operator.SecretVirtAPI}, s))
		pair, err := certs.Parse(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
		assert.NilError(t, err)
		_, err = pair.Cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: "virt-api.kubevirt.svc"})
		assert.NilError(t, err)
		apiService := &unstructured.Unstructured{}
		apiService.SetAPIVersion("apiregistration.k8s.io/v1")
		apiService.SetKind("APIService")
		assert.NilError(t, cl.Get(ctx, client.ObjectKey{Name: "v1.subresources.kubevirt.io"}, apiService))
		bundle, _, _ := unstructured.NestedString(apiService.Object, "spec", "caBundle")
		assert.Equal(t, bundle, base64.StdEncoding.EncodeToString([]byte(cm.Data[operator.CABundleKey])))
		hs := &corev1.Secret{}
		assert.NilError(t, cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: operator.SecretHandlerServer}, hs))
		assert.Equal(t, string(hs.Data[operator.CACertKey]), cm.Data[operator.CABundleKey])
	})

	t.Run("Deployed once the daemons are ready", func(t *testing.T) {
		ready(t, cl)
		testenv.Eventually(ctx, t, "the CR Available", func() (bool, string) {
			return hasCondition(kubevirt(t, cl, ns), virtv1.KubeVirtConditionAvailable, corev1.ConditionTrue, operator.ReasonAllComponentsReady, operator.MessageAvailable)
		})
		kv := kubevirt(t, cl, ns)
		assert.Equal(t, kv.Status.Phase, virtv1.KubeVirtPhaseDeployed)
		assert.Equal(t, kv.Status.ObservedKubeVirtVersion, "v1")
		assert.Equal(t, kv.Status.ObservedKubeVirtRegistry, "registry.test/virtkit")
		assert.Equal(t, kv.Status.OperatorVersion, "v0")
	})

	t.Run("a reconcile that changes nothing writes nothing", func(t *testing.T) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		assert.NilError(t, cl.Get(ctx, client.ObjectKey{Name: "virtualmachines.kubevirt.io"}, crd))
		d := &appsv1.Deployment{}
		assert.NilError(t, cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "virt-api"}, d))
		// Any event of a managed object reconciles the CR.
		kv := kubevirt(t, cl, ns)
		kv.Annotations = map[string]string{"touch": "1"}
		assert.NilError(t, cl.Update(ctx, kv))
		time.Sleep(2 * time.Second)
		crd2 := &apiextensionsv1.CustomResourceDefinition{}
		assert.NilError(t, cl.Get(ctx, client.ObjectKey{Name: "virtualmachines.kubevirt.io"}, crd2))
		d2 := &appsv1.Deployment{}
		assert.NilError(t, cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "virt-api"}, d2))
		assert.Equal(t, crd2.ResourceVersion, crd.ResourceVersion, "the CRD was written again")
		assert.Equal(t, d2.ResourceVersion, d.ResourceVersion, "the Deployment was written again")
	})

	t.Run("reverts drift", func(t *testing.T) {
		assert.NilError(t, cl.Delete(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "virt-handler"}}))
		d := &appsv1.Deployment{}
		assert.NilError(t, cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "virt-controller"}, d))
		five := int32(5)
		d.Spec.Replicas = &five
		assert.NilError(t, cl.Update(ctx, d))
		testenv.Eventually(ctx, t, "the ClusterRole back and the Deployment's replicas reverted", func() (bool, string) {
			if err := cl.Get(ctx, client.ObjectKey{Name: "virt-handler"}, &rbacv1.ClusterRole{}); err != nil {
				return false, err.Error()
			}
			d := &appsv1.Deployment{}
			if err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "virt-controller"}, d); err != nil {
				return false, err.Error()
			}
			return *d.Spec.Replicas == 2, fmt.Sprintf("replicas %d", *d.Spec.Replicas)
		})
		// The revert is a new generation the Deployment controller rolls out.
		ready(t, cl)
	})

	t.Run("a second CR is refused", func(t *testing.T) {
		assert.NilError(t, cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other"}}))
		second := &virtv1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "kubevirt"}}
		err := cl.Create(ctx, second)
		assert.ErrorContains(t, err, `admission webhook "`+operator.CreateWebhookName+`" denied the request: `+operator.MessageAlreadyCreated)
		assert.Assert(t, kubevirt(t, cl, "other") == nil, "the refused CR exists")
	})

	t.Run("an invalid change is refused, naming the field", func(t *testing.T) {
		kv := kubevirt(t, cl, ns)
		kv.Spec.CertificateRotationStrategy.SelfSigned = badRotation()
		kv.Spec.Configuration.AdditionalGuestMemoryOverheadRatio = ptr.To("0.5")
		err := cl.Update(ctx, kv)
		assert.Assert(t, apierrors.IsInvalid(err), "update: %v", err)
		for _, want := range []string{`admission webhook "` + operator.UpdateWebhookName + `" denied the request: `,
			"spec.certificateRotateStrategy.selfSigned.ca.renewBefore: Invalid value", "spec.configuration.additionalGuestMemoryOverheadRatio: Invalid value"} {
			assert.ErrorContains(t, err, want)
		}
		var status apierrors.APIStatus
		assert.Assert(t, errors.As(err, &status))
		var fields []string
		for _, c := range status.Status().Details.Causes {
			fields = append(fields, c.Field)
		}
		assert.DeepEqual(t, fields, []string{"spec.certificateRotateStrategy.selfSigned.ca.renewBefore", "spec.configuration.additionalGuestMemoryOverheadRatio"})
		kv = kubevirt(t, cl, ns)
		assert.Assert(t, kv.Spec.CertificateRotationStrategy.SelfSigned == nil, "the refused change was stored")
		assert.Equal(t, kv.Status.Phase, virtv1.KubeVirtPhaseDeployed)
	})

	t.Run("another tag rolls the daemons and reports the update", func(t *testing.T) {
		kv := kubevirt(t, cl, ns)
		kv.Spec.ImageTag = "v2"
		assert.NilError(t, cl.Update(ctx, kv))
		testenv.Eventually(ctx, t, "the CR updating", func() (bool, string) {
			return hasCondition(kubevirt(t, cl, ns), virtv1.KubeVirtConditionProgressing, corev1.ConditionTrue, operator.ReasonUpdating,
				"Transitioning from previous version v1 with registry registry.test/virtkit to target version v2 using registry registry.test/virtkit")
		})
		for _, name := range []string{"virt-api", "virt-controller"} {
			d := &appsv1.Deployment{}
			assert.NilError(t, cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d))
			assert.Equal(t, d.Spec.Template.Spec.Containers[0].Image, "registry.test/virtkit/"+name+":v2")
		}
		ready(t, cl)
		testenv.Eventually(ctx, t, "the CR Available on v2", func() (bool, string) {
			kv := kubevirt(t, cl, ns)
			if ok, s := hasCondition(kv, virtv1.KubeVirtConditionAvailable, corev1.ConditionTrue, operator.ReasonAllComponentsReady, operator.MessageAvailable); !ok {
				return false, s
			}
			return kv.Status.ObservedKubeVirtVersion == "v2", "observed " + kv.Status.ObservedKubeVirtVersion
		})
	})

	t.Run("uninstall waits for the VMs, then removes everything", func(t *testing.T) {
		err := cl.Delete(ctx, kubevirt(t, cl, ns))
		assert.ErrorContains(t, err, `admission webhook "`+operator.DeleteWebhookName+`" denied the request: `+
			"Rejecting the uninstall request, since there are still Virtual Machines present.")
		kv := kubevirt(t, cl, ns)
		assert.Assert(t, kv.DeletionTimestamp == nil, "the refused delete marked the CR")
		assert.Equal(t, kv.Status.Phase, virtv1.KubeVirtPhaseDeployed)

		assert.NilError(t, cl.Delete(ctx, vm))
		assert.NilError(t, cl.Delete(ctx, kubevirt(t, cl, ns)))
		testenv.Eventually(ctx, t, "the CR gone", func() (bool, string) {
			kv := kubevirt(t, cl, ns)
			if kv == nil {
				return true, ""
			}
			crds := &apiextensionsv1.CustomResourceDefinitionList{}
			_ = cl.List(ctx, crds)
			var terminating []string
			for _, c := range crds.Items {
				for _, cond := range c.Status.Conditions {
					if cond.Type == apiextensionsv1.Terminating {
						terminating = append(terminating, c.Name+": "+cond.Reason+" "+cond.Message)
					}
				}
			}
			return false, "phase " + string(kv.Status.Phase) + ": " + describe(kv.Status.Conditions) + "; CRDs terminating: " + strings.Join(terminating, "; ")
		})
		for _, o := range []client.Object{
			&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "virt-api"}},
			&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "virt-handler"}},
			&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "virt-handler"}},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: operator.SecretCA}},
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "virt-api"}},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: operator.SecretOperator}},
			&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: operator.WebhookConfigurationName}},
			&apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "virtualmachines.kubevirt.io"}},
		} {
			err := cl.Get(ctx, client.ObjectKeyFromObject(o), o)
			assert.Assert(t, apierrors.IsNotFound(err), "%T %s after uninstall: %v", o, client.ObjectKeyFromObject(o), err)
		}
		// The operator's own CRD stays; the node keeps only its own labels.
		assert.NilError(t, cl.Get(ctx, client.ObjectKey{Name: "kubevirts.kubevirt.io"}, &apiextensionsv1.CustomResourceDefinition{}))
		n := &corev1.Node{}
		assert.NilError(t, cl.Get(ctx, client.ObjectKey{Name: "node-a"}, n))
		assert.DeepEqual(t, n.Labels, map[string]string{"team": "blue"})
	})
}

package evacuation_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"gotest.tools/v3/assert"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/virtkit/virtkit/controllers/evacuation"
	"github.com/virtkit/virtkit/controllers/vmi"
	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/internal/testenv/kubeenv"
	virtadmission "github.com/virtkit/virtkit/virtapi/admission"
	"github.com/virtkit/virtkit/virtapi/eviction"
	"github.com/virtkit/virtkit/virtapi/frontproxy"
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	testenv.Main(m)
}

// start runs a real apiserver calling the eviction webhook, and the
// evacuation controller in a manager. No scheduler, kubelet, migration
// controller or handler runs: the test plays them.
//
// The apiserver presents a client certificate to the webhook, and the
// webhook starts an evacuation only for calls that carry it; start also
// returns the webhook's side: its address, for calls that do not come from
// the apiserver, and how many calls it answered.
func start(t *testing.T) (client.Client, *webhookSide) {
	t.Helper()
	caller := kubeenv.NewWebhookCaller(t)
	cp := kubeenv.ControlPlane(t, caller.ControlPlaneOption(), kubeenv.WithWebhooks(nil, []*admissionregistrationv1.ValidatingWebhookConfiguration{
		eviction.Configuration(virtadmission.Service{Namespace: "kubevirt", Name: "virt-api", Port: 443})}))
	o := cp.Env.WebhookInstallOptions
	srv := webhook.NewServer(webhook.Options{Host: o.LocalServingHost, Port: o.LocalServingPort, CertDir: o.LocalServingCertDir,
		TLSOpts: []func(*tls.Config){func(c *tls.Config) { c.ClientAuth = tls.RequestClientCert }}})
	side := &webhookSide{}
	h := eviction.NewWebhook(cp.Client, "",
		eviction.WithCaller(&frontproxy.Authenticator{ClientCA: caller.ClientCA, AllowedNames: []string{caller.Name}})).Handler()
	srv.Register(eviction.WebhookPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		side.calls.Add(1)
		h.ServeHTTP(w, r)
	}))
	skip := true
	mgr, err := ctrl.NewManager(cp.Config, ctrl.Options{Scheme: cp.Client.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0", Controller: config.Controller{SkipNameValidation: &skip}})
	assert.NilError(t, err)
	assert.NilError(t, evacuation.New("").SetupWithManager(mgr))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	go func() { done <- srv.Start(ctx) }()
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		for range 2 {
			assert.Check(t, <-done)
		}
	})
	addr := net.JoinHostPort(o.LocalServingHost, strconv.Itoa(o.LocalServingPort))
	testenv.EventuallyEvery(testenv.Within(t, 10*time.Second), t, 20*time.Millisecond, "the webhook server serving on "+addr, func() (bool, string) {
		c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			return false, err.Error()
		}
		c.Close()
		return true, ""
	})
	side.addr = addr
	return cp.Client, side
}

// webhookSide is the eviction webhook as the test sees it.
type webhookSide struct {
	addr  string
	calls atomic.Int64
}

// running creates a VMI running on node-a with its launcher pod there.
func running(t *testing.T, c client.Client, name string, strategy *virtv1.EvictionStrategy, migratable bool) (*virtv1.VirtualMachineInstance, *corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	v := &virtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: virtv1.VirtualMachineInstanceSpec{EvictionStrategy: strategy, Domain: virtv1.DomainSpec{
			Resources: virtv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}}},
	}
	assert.NilError(t, c.Create(ctx, v))
	pod, err := vmi.RenderPod(v, vmi.PodOptions{LauncherImage: "virtkit/virt-launcher:test", Emulation: true})
	assert.NilError(t, err)
	pod.Spec.NodeName = "node-a"
	assert.NilError(t, c.Create(ctx, pod))
	st := corev1.ConditionTrue
	if !migratable {
		st = corev1.ConditionFalse
	}
	v.Status = virtv1.VirtualMachineInstanceStatus{Phase: virtv1.Running, NodeName: "node-a", Conditions: []virtv1.VirtualMachineInstanceCondition{{
		Type: virtv1.VirtualMachineInstanceIsMigratable, Status: st, Reason: "DisksNotLiveMigratable", Message: "not shared"}}}
	assert.NilError(t, c.Status().Update(ctx, v))
	return v, pod
}

func evict(c client.Client, pod *corev1.Pod, dryRun bool) error {
	e := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace}}
	if dryRun {
		e.DeleteOptions = &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}
	}
	return c.SubResource("eviction").Create(context.Background(), pod, e)
}

func evacuationMigrations(t *testing.T, c client.Client, name string) []virtv1.VirtualMachineInstanceMigration {
	t.Helper()
	var list virtv1.VirtualMachineInstanceMigrationList
	assert.NilError(t, c.List(context.Background(), &list, client.InNamespace("default")))
	var out []virtv1.VirtualMachineInstanceMigration
	for _, m := range list.Items {
		if _, ok := m.Annotations[virtv1.EvacuationMigrationAnnotation]; ok && m.Spec.VMIName == name {
			out = append(out, m)
		}
	}
	return out
}

func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	testenv.EventuallyEvery(testenv.Within(t, 15*time.Second), t, 50*time.Millisecond, what, cond)
}

func get(t *testing.T, c client.Client, v *virtv1.VirtualMachineInstance) *virtv1.VirtualMachineInstance {
	t.Helper()
	got := &virtv1.VirtualMachineInstance{}
	assert.NilError(t, c.Get(context.Background(), client.ObjectKeyFromObject(v), got))
	return got
}

// editStatus changes v's status as the API has it now with edit, again on
// a conflict: the test plays the handler or the migration controller.
func editStatus(t *testing.T, c client.Client, v *virtv1.VirtualMachineInstance, edit func(*virtv1.VirtualMachineInstanceStatus)) {
	t.Helper()
	assert.NilError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got := get(t, c, v)
		edit(&got.Status)
		return c.Status().Update(context.Background(), got)
	}))
}

func strategy(s virtv1.EvictionStrategy) *virtv1.EvictionStrategy { return &s }

func TestEvacuation(t *testing.T) {
	c, side := start(t)
	ctx := context.Background()

	t.Run("LiveMigrate: the eviction becomes a migration", func(t *testing.T) {
		v, pod := running(t, c, "live", strategy(virtv1.EvictionStrategyLiveMigrate), true)
		err := evict(c, pod, true)
		assert.Assert(t, apierrors.IsTooManyRequests(err), "dry run: %v", err)
		time.Sleep(300 * time.Millisecond)
		assert.Equal(t, get(t, c, v).Status.EvacuationNodeName, "", "a dry run changes nothing")

		err = evict(c, pod, false)
		assert.Assert(t, apierrors.IsTooManyRequests(err), "eviction: %v", err)
		assert.ErrorContains(t, err, "Eviction triggered evacuation of VMI default/live")
		assert.Equal(t, get(t, c, v).Status.EvacuationNodeName, "node-a")
		eventually(t, "an evacuation migration", func() (bool, string) {
			n := len(evacuationMigrations(t, c, "live"))
			return n == 1, fmt.Sprintf("%d", n)
		})
		// A drain retries: no second migration while the first runs.
		assert.Assert(t, apierrors.IsTooManyRequests(evict(c, pod, false)))
		time.Sleep(time.Second)
		migs := evacuationMigrations(t, c, "live")
		assert.Equal(t, len(migs), 1)
		assert.Assert(t, strings.HasPrefix(migs[0].Name, evacuation.MigrationGenerateName), migs[0].Name)
		assert.Equal(t, migs[0].Annotations[virtv1.EvacuationMigrationAnnotation], "node-a")

		// The migration succeeds: the VMI runs on node-b (the target's
		// handler), the migration is Succeeded (its controller), the source
		// pod ended.
		editStatus(t, c, v, func(st *virtv1.VirtualMachineInstanceStatus) { st.NodeName = "node-b" })
		m := migs[0]
		m.Status.Phase = virtv1.MigrationSucceeded
		assert.NilError(t, c.Status().Update(ctx, &m))
		eventually(t, "evacuationNodeName cleared", func() (bool, string) {
			n := get(t, c, v).Status.EvacuationNodeName
			return n == "", n
		})
		pod.Status.Phase = corev1.PodSucceeded
		assert.NilError(t, c.Status().Update(ctx, pod))
		assert.NilError(t, evict(c, pod, false), "the ended source pod goes")
		assert.Equal(t, len(evacuationMigrations(t, c, "live")), 1)
	})

	t.Run("a review posted by anyone but the apiserver is answered and changes nothing", func(t *testing.T) {
		v, pod := running(t, c, "forged", strategy(virtv1.EvictionStrategyLiveMigrate), true)
		review := admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request: &admissionv1.AdmissionRequest{UID: "forged-1", Operation: admissionv1.Create, Namespace: pod.Namespace, Name: pod.Name,
				Kind:     metav1.GroupVersionKind{Group: "policy", Version: "v1", Kind: "Eviction"},
				Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, SubResource: "eviction",
				UserInfo: authenticationv1.UserInfo{Username: "system:admin", Groups: []string{"system:masters"}},
				Object:   runtime.RawExtension{Raw: []byte(`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"` + pod.Name + `"}}`)}}}
		body, err := json.Marshal(review)
		assert.NilError(t, err)
		hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		resp, err := hc.Post("https://"+side.addr+eviction.WebhookPath, "application/json", bytes.NewReader(body))
		assert.NilError(t, err)
		defer resp.Body.Close()
		var answer admissionv1.AdmissionReview
		assert.NilError(t, json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&answer))
		assert.Assert(t, answer.Response != nil && !answer.Response.Allowed, "%+v", answer.Response)
		assert.Equal(t, answer.Response.Result.Code, int32(http.StatusTooManyRequests))
		assert.Assert(t, strings.Contains(answer.Response.Result.Message, "not known to be one"), answer.Response.Result.Message)
		time.Sleep(300 * time.Millisecond)
		assert.Equal(t, get(t, c, v).Status.EvacuationNodeName, "", "a forged review started an evacuation")
		assert.Equal(t, len(evacuationMigrations(t, c, "forged")), 0)

		// The same eviction through the apiserver does.
		assert.Assert(t, apierrors.IsTooManyRequests(evict(c, pod, false)))
		assert.Equal(t, get(t, c, v).Status.EvacuationNodeName, "node-a")
	})

	t.Run("evicting a pod that is not a launcher never calls virt-api", func(t *testing.T) {
		other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "web", Image: "example/web:1"}}}}
		assert.NilError(t, c.Create(ctx, other))
		calls := side.calls.Load()
		assert.NilError(t, evict(c, other, false))
		assert.Equal(t, side.calls.Load(), calls, "the apiserver called the eviction webhook for a pod that is not a launcher")
	})

	t.Run("LiveMigrate but not migratable: refused, says why", func(t *testing.T) {
		v, pod := running(t, c, "stuck", strategy(virtv1.EvictionStrategyLiveMigrate), false)
		err := evict(c, pod, false)
		assert.Assert(t, apierrors.IsTooManyRequests(err), "%v", err)
		assert.ErrorContains(t, err, "VMI default/stuck is configured with an eviction strategy but is not live-migratable: DisksNotLiveMigratable: not shared")
		assert.Equal(t, get(t, c, v).Status.EvacuationNodeName, "")
	})

	t.Run("External: refused and recorded, not migrated", func(t *testing.T) {
		v, pod := running(t, c, "external", strategy(virtv1.EvictionStrategyExternal), true)
		assert.Assert(t, apierrors.IsTooManyRequests(evict(c, pod, false)))
		assert.Equal(t, get(t, c, v).Status.EvacuationNodeName, "node-a")
		time.Sleep(time.Second)
		assert.Equal(t, len(evacuationMigrations(t, c, "external")), 0)
	})

	t.Run("None, and LiveMigrateIfPossible when not migratable: evicted", func(t *testing.T) {
		_, pod := running(t, c, "plain", nil, true)
		assert.NilError(t, evict(c, pod, false))
		_, pod = running(t, c, "ifpossible", strategy(virtv1.EvictionStrategyLiveMigrateIfPossible), false)
		assert.NilError(t, evict(c, pod, false))
	})
}

// A node carrying the drain taint (the KubeVirt CR's
// migrations.nodeDrainTaintKey, kubevirt.io/drain by default, effect
// NoSchedule) is emptied by live migration of the VMIs whose eviction
// strategy migrates them and that can migrate, as KubeVirt's evacuation
// controller does; no eviction is involved and evacuationNodeName stays
// empty.
func TestDrainTaint(t *testing.T) {
	c, _ := start(t)
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
	assert.NilError(t, c.Create(ctx, node))
	setTaints := func(edit func([]corev1.Taint) []corev1.Taint) {
		t.Helper()
		assert.NilError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			n := &corev1.Node{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(node), n); err != nil {
				return err
			}
			n.Spec.Taints = edit(n.Spec.Taints)
			return c.Update(ctx, n)
		}))
	}
	taint := func(key string) {
		t.Helper()
		setTaints(func(ts []corev1.Taint) []corev1.Taint {
			return append(ts, corev1.Taint{Key: key, Value: "draining", Effect: corev1.TaintEffectNoSchedule})
		})
	}
	live, _ := running(t, c, "live", strategy(virtv1.EvictionStrategyLiveMigrate), true)
	ifPossible, _ := running(t, c, "if-possible", strategy(virtv1.EvictionStrategyLiveMigrateIfPossible), true)
	running(t, c, "stuck", strategy(virtv1.EvictionStrategyLiveMigrate), false)
	running(t, c, "none", nil, true)

	// Another NoSchedule taint drains nothing.
	taint("node.kubernetes.io/unschedulable")
	time.Sleep(time.Second)
	for _, name := range []string{"live", "if-possible", "stuck", "none"} {
		assert.Equal(t, len(evacuationMigrations(t, c, name)), 0, name)
	}

	taint("kubevirt.io/drain")
	eventually(t, "evacuation migrations of live and if-possible", func() (bool, string) {
		a, b := evacuationMigrations(t, c, "live"), evacuationMigrations(t, c, "if-possible")
		return len(a) == 1 && len(b) == 1, fmt.Sprintf("%d and %d", len(a), len(b))
	})
	time.Sleep(time.Second)
	for _, name := range []string{"stuck", "none"} {
		assert.Equal(t, len(evacuationMigrations(t, c, name)), 0, name)
	}
	m := evacuationMigrations(t, c, "live")
	assert.Equal(t, len(m), 1, "a second migration while the first runs")
	assert.Equal(t, m[0].Annotations[virtv1.EvacuationMigrationAnnotation], "node-a")
	assert.Equal(t, get(t, c, live).Status.EvacuationNodeName, "")

	// The migration fails: another one, after RetryAfter, while the taint
	// stays.
	m[0].Status.Phase = virtv1.MigrationFailed
	m[0].Status.PhaseTransitionTimestamps = []virtv1.VirtualMachineInstanceMigrationPhaseTransitionTimestamp{
		{Phase: virtv1.MigrationFailed, PhaseTransitionTimestamp: metav1.Now()}}
	assert.NilError(t, c.Status().Update(ctx, &m[0]))
	testenv.EventuallyEvery(testenv.Within(t, 3*evacuation.RetryAfter), t, 100*time.Millisecond, "a second migration of live", func() (bool, string) {
		n := len(evacuationMigrations(t, c, "live"))
		return n == 2, fmt.Sprint(n)
	})

	// if-possible's migration succeeds: it runs on node-b, which has no
	// taint, and nothing more happens to it.
	editStatus(t, c, ifPossible, func(st *virtv1.VirtualMachineInstanceStatus) { st.NodeName = "node-b" })
	mp := evacuationMigrations(t, c, "if-possible")[0]
	mp.Status.Phase = virtv1.MigrationSucceeded
	assert.NilError(t, c.Status().Update(ctx, &mp))
	time.Sleep(time.Second)
	assert.Equal(t, len(evacuationMigrations(t, c, "if-possible")), 1)

	// The CR names another key: kubevirt.io/drain no longer drains, the
	// new key does.
	assert.NilError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt"}}))
	key := "example.com/maintenance"
	assert.NilError(t, c.Create(ctx, &virtv1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "kubevirt"},
		Spec: virtv1.KubeVirtSpec{Configuration: virtv1.KubeVirtConfiguration{MigrationConfiguration: &virtv1.MigrationConfiguration{NodeDrainTaintKey: &key}}}}))
	running(t, c, "later", strategy(virtv1.EvictionStrategyLiveMigrate), true)
	time.Sleep(time.Second)
	assert.Equal(t, len(evacuationMigrations(t, c, "later")), 0, "kubevirt.io/drain drained a VMI though the CR names another key")
	taint(key)
	eventually(t, "an evacuation migration of later", func() (bool, string) {
		n := len(evacuationMigrations(t, c, "later"))
		return n == 1, fmt.Sprint(n)
	})

	// The taint removed before the migration ends: the evacuation stops
	// (its migration is deleted, as migrate-cancel does), and the VMI stays.
	setTaints(func([]corev1.Taint) []corev1.Taint { return nil })
	eventually(t, "later's evacuation migration cancelled", func() (bool, string) {
		n := len(evacuationMigrations(t, c, "later"))
		return n == 0, fmt.Sprint(n)
	})
}

// Clearing a drain's mark (virt-api's evacuatecancel) stops the
// evacuation: the migration that has not moved the VMI yet is deleted.
func TestEvacuationCancelled(t *testing.T) {
	c, _ := start(t)
	v, pod := running(t, c, "cancelled", strategy(virtv1.EvictionStrategyLiveMigrate), true)
	assert.Assert(t, apierrors.IsTooManyRequests(evict(c, pod, false)))
	eventually(t, "an evacuation migration", func() (bool, string) {
		n := len(evacuationMigrations(t, c, "cancelled"))
		return n == 1, fmt.Sprint(n)
	})
	editStatus(t, c, v, func(st *virtv1.VirtualMachineInstanceStatus) { st.EvacuationNodeName = "" })
	eventually(t, "the evacuation migration deleted", func() (bool, string) {
		n := len(evacuationMigrations(t, c, "cancelled"))
		return n == 0, fmt.Sprint(n)
	})
	assert.Equal(t, get(t, c, v).Status.Phase, virtv1.Running)
}

package operator_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/deploy"
	"github.com/virtkit/virtkit/deploy/certs"
	"github.com/virtkit/virtkit/operator"
)

var settings = operator.Settings{Namespace: "kubevirt", Registry: "quay.test/virtkit", Tag: "v0", Version: "v0"}

// podSpec is the pod template of a Deployment or DaemonSet, or nil.
func podSpec(o client.Object) *corev1.PodSpec {
	switch w := o.(type) {
	case *appsv1.Deployment:
		return &w.Spec.Template.Spec
	case *appsv1.DaemonSet:
		return &w.Spec.Template.Spec
	}
	return nil
}

func images(objs []client.Object) map[string]string {
	out := map[string]string{}
	for _, o := range objs {
		spec := podSpec(o)
		if spec == nil {
			continue
		}
		for _, c := range append(spec.InitContainers, spec.Containers...) {
			out[o.GetName()+"/"+c.Name] = c.Image
		}
	}
	return out
}

// The CR's registry and tag choose every image; the operator's own are
// the default.
func TestComponentsImages(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec virtv1.KubeVirtSpec
		want string
	}{
		{"operator's defaults", virtv1.KubeVirtSpec{}, "quay.test/virtkit/%s:v0"},
		{"the CR's registry and tag", virtv1.KubeVirtSpec{ImageRegistry: "reg:5000/x/", ImageTag: "v9"}, "reg:5000/x/%s:v9"},
		{"a digest", virtv1.KubeVirtSpec{ImageTag: "sha256:abc"}, "quay.test/virtkit/%s@sha256:abc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := operator.Components(&virtv1.KubeVirt{Spec: tc.spec}, settings, []byte("ca"))
			if err != nil {
				t.Fatal(err)
			}
			img := func(n string) string { return strings.Replace(tc.want, "%s", n, 1) }
			want := map[string]string{
				"virt-api/virt-api": img("virt-api"), "virt-controller/virt-controller": img("virt-controller"),
				"virt-exportproxy/virt-exportproxy": img("virt-exportproxy"),
				"virt-handler/virt-handler":         img("virt-handler"),
				// The node labeller is the launcher's host CPU probe.
				"virt-handler/node-labeller": img("virt-launcher"),
			}
			if diff := cmp.Diff(want, images(objs)); diff != "" {
				t.Errorf("images (-want +got):\n%s", diff)
			}
			for _, o := range objs {
				if d, ok := o.(*appsv1.Deployment); ok && d.Name == "virt-controller" {
					args := strings.Join(d.Spec.Template.Spec.Containers[0].Args, " ")
					if !strings.Contains(args, "--launcher-image="+img("virt-launcher")) {
						t.Errorf("virt-controller's args %q: no launcher image %s", args, img("virt-launcher"))
					}
					if !strings.Contains(args, "--importer-image="+img("virt-importer")) {
						t.Errorf("virt-controller's args %q: no importer image %s", args, img("virt-importer"))
					}
				}
			}
		})
	}
}

// Every component is marked as the operator's; neither the operator's
// own CRD nor its namespace is among them.
func TestComponentsMarkedAndScoped(t *testing.T) {
	objs, err := operator.Components(&virtv1.KubeVirt{}, settings, []byte("ca"))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		what := o.GetObjectKind().GroupVersionKind().Kind + " " + o.GetName()
		if o.GetLabels()[operator.ManagedByLabel] != operator.ManagedByValue || o.GetAnnotations()[operator.VersionAnnotation] != "v0" {
			t.Errorf("%s: labels %v annotations %v", what, o.GetLabels(), o.GetAnnotations())
		}
		if o.GetName() == "kubevirts.kubevirt.io" || o.GetObjectKind().GroupVersionKind().Kind == "Namespace" {
			t.Errorf("%s is among the components", what)
		}
	}
}

func TestComponentsReplicas(t *testing.T) {
	three := uint8(3)
	objs, err := operator.Components(&virtv1.KubeVirt{Spec: virtv1.KubeVirtSpec{Infra: &virtv1.ComponentConfig{Replicas: &three}}}, settings, []byte("ca"))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if d, ok := o.(*appsv1.Deployment); ok && *d.Spec.Replicas != 3 {
			t.Errorf("Deployment %s: %d replicas, want spec.infra.replicas 3", d.Name, *d.Spec.Replicas)
		}
	}
}

// spec.infra.nodePlacement places virt-api and virt-controller,
// spec.workloads.nodePlacement virt-handler, as in KubeVirt.
func TestComponentsPlacement(t *testing.T) {
	infra := &virtv1.NodePlacement{NodeSelector: map[string]string{"role": "infra"}}
	work := &virtv1.NodePlacement{NodeSelector: map[string]string{"role": "vms"},
		Tolerations: []corev1.Toleration{{Key: "vms", Operator: corev1.TolerationOpExists}}}
	objs, err := operator.Components(&virtv1.KubeVirt{Spec: virtv1.KubeVirtSpec{
		Infra: &virtv1.ComponentConfig{NodePlacement: infra}, Workloads: &virtv1.ComponentConfig{NodePlacement: work}}}, settings, []byte("ca"))
	if err != nil {
		t.Fatal(err)
	}
	roles := map[string]string{}
	for _, o := range objs {
		spec := podSpec(o)
		if spec == nil {
			continue
		}
		if _, ok := o.(*appsv1.DaemonSet); ok && !slices.ContainsFunc(spec.Tolerations, func(t corev1.Toleration) bool { return t.Key == "vms" }) {
			t.Errorf("DaemonSet %s tolerations %v, without the workloads'", o.GetName(), spec.Tolerations)
		}
		roles[o.GetName()] = spec.NodeSelector["role"]
	}
	if diff := cmp.Diff(map[string]string{"virt-api": "infra", "virt-controller": "infra", "virt-exportproxy": "infra", "virt-handler": "vms"}, roles); diff != "" {
		t.Errorf("placement (-want +got):\n%s", diff)
	}
}

// The CR's useEmulation reaches no pod template, so changing it rolls no
// daemon: the handler and virt-controller read it live. Only the
// operator's own Settings.Emulation, a property of the nodes, makes the
// handler never use KVM and the node labeller ask about emulation.
func TestComponentsEmulation(t *testing.T) {
	handler := func(s operator.Settings, useEmulation bool) *appsv1.DaemonSet {
		t.Helper()
		return handlerDaemonSet(t, &virtv1.KubeVirt{Spec: virtv1.KubeVirtSpec{Configuration: virtv1.KubeVirtConfiguration{
			DeveloperConfiguration: &virtv1.DeveloperConfiguration{UseEmulation: useEmulation}}}}, s)
	}
	args := func(ds *appsv1.DaemonSet) (emulation bool, virtType string) {
		emulation = slices.Contains(ds.Spec.Template.Spec.Containers[0].Args, "--emulation")
		for _, c := range ds.Spec.Template.Spec.InitContainers {
			if i := slices.Index(c.Command, "--virt-type"); i >= 0 {
				virtType = c.Command[i+1]
			}
		}
		return emulation, virtType
	}
	off, on := handler(settings, false), handler(settings, true)
	if diff := cmp.Diff(off, on); diff != "" {
		t.Errorf("the CR's useEmulation changed the handler's DaemonSet (-false +true):\n%s", diff)
	}
	if e, v := args(on); e || v != "auto" {
		t.Errorf("without Settings.Emulation: --emulation %t, --virt-type %q; want false, auto", e, v)
	}
	s := settings
	s.Emulation = true
	if e, v := args(handler(s, false)); !e || v != "qemu" {
		t.Errorf("with Settings.Emulation: --emulation %t, --virt-type %q; want true, qemu", e, v)
	}
}

// handlerDaemonSet is virt-handler's DaemonSet among the components for kv.
func handlerDaemonSet(t *testing.T, kv *virtv1.KubeVirt, s operator.Settings) *appsv1.DaemonSet {
	t.Helper()
	objs, err := operator.Components(kv, s, []byte("ca"))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if ds, ok := o.(*appsv1.DaemonSet); ok && ds.Name == "virt-handler" {
			return ds
		}
	}
	t.Fatal("no virt-handler DaemonSet")
	return nil
}

// The CR's migration network reaches the handlers' pods as KubeVirt's
// operator puts it there, the Multus annotation naming the interface
// migration0, so a change rolls them; nothing else changes.
func TestComponentsMigrationNetwork(t *testing.T) {
	handler := func(network *string) *appsv1.DaemonSet {
		t.Helper()
		return handlerDaemonSet(t, &virtv1.KubeVirt{Spec: virtv1.KubeVirtSpec{Configuration: virtv1.KubeVirtConfiguration{
			MigrationConfiguration: &virtv1.MigrationConfiguration{Network: network}}}}, settings)
	}
	off, on := handler(nil), handler(ptr.To("migration-net"))
	if got := on.Spec.Template.Annotations[deploy.MultusNetworksAnnotation]; got != "migration-net@migration0" {
		t.Errorf("the handlers' pods join %q, want migration-net@migration0", got)
	}
	on.Spec.Template.Annotations = nil
	if diff := cmp.Diff(off, on); diff != "" {
		t.Errorf("the migration network changed more than the annotation (-none +migration-net):\n%s", diff)
	}
	s := settings
	s.APIServer = "127.0.0.1:6443"
	kv := &virtv1.KubeVirt{Spec: virtv1.KubeVirtSpec{Configuration: virtv1.KubeVirtConfiguration{
		MigrationConfiguration: &virtv1.MigrationConfiguration{Network: ptr.To("migration-net")}}}}
	if _, err := operator.Components(kv, s, []byte("ca")); err == nil || !strings.Contains(err.Error(), "needs the pod network") {
		t.Errorf("a migration network for handlers on their nodes' network: %v", err)
	}
}

// On a node whose pods take the host's network (Settings.APIServer), each
// daemon gets a port of its own, and the node folders reach the handler.
func TestComponentsHostNetwork(t *testing.T) {
	s := settings
	s.APIServer, s.KubeletPodsDir, s.HandlerStateDir = "127.0.0.1:6443", "/data/kubelet/pods", "/data/handlers/n1"
	objs, err := operator.Components(&virtv1.KubeVirt{}, s, []byte("ca"))
	if err != nil {
		t.Fatal(err)
	}
	ports := map[int32]string{}
	var hostPaths []string
	for _, o := range objs {
		spec := podSpec(o)
		if spec == nil {
			continue
		}
		if !spec.HostNetwork {
			t.Errorf("%s: not on the host's network", o.GetName())
		}
		for _, c := range append(spec.InitContainers, spec.Containers...) {
			for _, p := range c.Ports {
				if other, ok := ports[p.ContainerPort]; ok {
					t.Errorf("port %d of %s/%s is %s's too", p.ContainerPort, o.GetName(), p.Name, other)
				}
				ports[p.ContainerPort] = o.GetName() + "/" + p.Name
			}
		}
		for _, v := range spec.Volumes {
			if v.HostPath != nil {
				hostPaths = append(hostPaths, v.HostPath.Path)
			}
		}
	}
	for _, want := range []string{s.KubeletPodsDir, s.HandlerStateDir} {
		if !slices.Contains(hostPaths, want) {
			t.Errorf("no hostPath %s among %v", want, hostPaths)
		}
	}
}

func TestSettingsCheck(t *testing.T) {
	err := operator.Settings{APIServer: "nope", KubeletPodsDir: "pods"}.Check()
	for _, want := range []string{"Settings.Namespace: required", "Settings.Registry: required", "Settings.Tag: required", `Settings.APIServer "nope"`,
		`Settings.KubeletPodsDir "pods": must be absolute`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check() = %v, want %q", err, want)
		}
	}
}

func TestSettingsCheckWebhookURL(t *testing.T) {
	base := operator.Settings{Namespace: "kubevirt", Registry: "r", Tag: "v1"}
	for _, tc := range []struct{ url, err string }{
		{"https://127.0.0.1:9443", ""},
		{"https://operator.example/hooks", ""},
		{"http://127.0.0.1:9443", "want https://HOST[:PORT][/PATH]"},
		{"https://", "want https://HOST[:PORT][/PATH]"},
		{"https://h/?a=b", "no user, query or fragment allowed"},
		{"https://u@h/", "no user, query or fragment allowed"},
	} {
		s := base
		s.WebhookURL = tc.url
		err := s.Check()
		if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("Check() with WebhookURL %q = %v, want %q", tc.url, err, tc.err)
		}
	}
}

// The operator's webhook configuration calls its Service, or the URL it
// was given (and then no Service), for creates and deletes of KubeVirt CRs
// only, failing closed; updates of their spec (never of their status,
// a subresource the rule leaves out).
func TestComponentsWebhook(t *testing.T) {
	kv := &virtv1.KubeVirt{}
	for _, tc := range []struct {
		url         string
		wantService bool
		wantURL     string
	}{
		{"", true, ""},
		{"https://127.0.0.1:9443", false, "https://127.0.0.1:9443" + operator.DeleteValidatePath},
	} {
		s := operator.Settings{Namespace: "kubevirt", Registry: "r", Tag: "v1", WebhookURL: tc.url}
		objs, err := operator.Components(kv, s, []byte("bundle"))
		if err != nil {
			t.Fatal(err)
		}
		var vwc *admissionregistrationv1.ValidatingWebhookConfiguration
		service := false
		for _, o := range objs {
			switch o := o.(type) {
			case *admissionregistrationv1.ValidatingWebhookConfiguration:
				if o.Name == operator.WebhookConfigurationName {
					vwc = o
				}
			case *corev1.Service:
				service = service || o.Name == operator.WebhookService
			}
		}
		if vwc == nil || len(vwc.Webhooks) != 3 {
			t.Fatalf("URL %q: configuration %+v", tc.url, vwc)
		}
		if service != tc.wantService {
			t.Errorf("URL %q: Service made %t, want %t", tc.url, service, tc.wantService)
		}
		del := vwc.Webhooks[0]
		if del.Name != operator.DeleteWebhookName || string(del.ClientConfig.CABundle) != "bundle" || *del.FailurePolicy != admissionregistrationv1.Fail ||
			len(del.Rules) != 1 || del.Rules[0].Operations[0] != admissionregistrationv1.Delete || del.Rules[0].Resources[0] != "kubevirts" {
			t.Errorf("URL %q: delete webhook %+v", tc.url, del)
		}
		if tc.wantURL != "" && (del.ClientConfig.URL == nil || *del.ClientConfig.URL != tc.wantURL || del.ClientConfig.Service != nil) {
			t.Errorf("URL %q: client config %+v, want URL %s", tc.url, del.ClientConfig, tc.wantURL)
		}
		if tc.wantURL == "" && (del.ClientConfig.Service == nil || del.ClientConfig.Service.Name != operator.WebhookService ||
			*del.ClientConfig.Service.Path != operator.DeleteValidatePath) {
			t.Errorf("URL %q: client config %+v, want the Service", tc.url, del.ClientConfig)
		}
		if u := vwc.Webhooks[1]; u.Name != operator.UpdateWebhookName || u.Rules[0].Operations[0] != admissionregistrationv1.Update ||
			len(u.Rules[0].Resources) != 1 || u.Rules[0].Resources[0] != "kubevirts" {
			t.Errorf("URL %q: update webhook %+v", tc.url, u)
		}
		if c := vwc.Webhooks[2]; c.Name != operator.CreateWebhookName || c.Rules[0].Operations[0] != admissionregistrationv1.Create {
			t.Errorf("URL %q: create webhook %+v", tc.url, c)
		}
	}
}

func d(h float64) *metav1.Duration {
	return &metav1.Duration{Duration: time.Duration(h * float64(time.Hour))}
}

func TestValidate(t *testing.T) {
	zero := uint8(0)
	for _, tc := range []struct {
		name string
		spec virtv1.KubeVirtSpec
		want []string
	}{
		{"valid", virtv1.KubeVirtSpec{}, nil},
		{"zero replicas", virtv1.KubeVirtSpec{Infra: &virtv1.ComponentConfig{Replicas: &zero}}, []string{"spec.infra.replicas: Invalid value: 0: infra replica count can't be 0"}},
		{"pull policy", virtv1.KubeVirtSpec{ImagePullPolicy: "Sometimes"}, []string{`spec.imagePullPolicy: Unsupported value: "Sometimes"`}},
		{"renewBefore beyond duration", virtv1.KubeVirtSpec{CertificateRotationStrategy: virtv1.KubeVirtCertificateRotateStrategy{SelfSigned: &virtv1.KubeVirtSelfSignConfiguration{
			CA: &virtv1.CertConfig{Duration: d(10), RenewBefore: d(11)}, Server: &virtv1.CertConfig{Duration: d(20)}}}},
			[]string{"spec.certificateRotateStrategy.selfSigned.ca.renewBefore: Invalid value: \"11h0m0s\": CA RenewBefore cannot exceed Duration",
				"spec.certificateRotateStrategy.selfSigned.server.duration: Invalid value: \"20h0m0s\": Certificate duration cannot exceed CA"}},
		{"mixed forms", virtv1.KubeVirtSpec{CertificateRotationStrategy: virtv1.KubeVirtCertificateRotateStrategy{SelfSigned: &virtv1.KubeVirtSelfSignConfiguration{
			CARotateInterval: d(48), Server: &virtv1.CertConfig{Duration: d(0.5)}}}},
			[]string{"spec.certificateRotateStrategy.selfSigned: Forbidden: caRotateInterval, certRotateInterval and caOverlapInterval are deprecated",
				"spec.certificateRotateStrategy.selfSigned.server.duration: Invalid value: \"30m0s\": must be at least 1h1m0s"}},
		{"patch not JSON", virtv1.KubeVirtSpec{CustomizeComponents: virtv1.CustomizeComponents{Patches: []virtv1.CustomizeComponentsPatch{
			{ResourceName: "virt-api", ResourceType: "Deployment", Patch: `{"a":1}`, Type: virtv1.StrategicMergePatchType},
			{ResourceName: "virt-api", ResourceType: "Deployment", Patch: `{a:1}`, Type: virtv1.StrategicMergePatchType}}}},
			[]string{`spec.customizeComponents.patches[1].patch: Invalid value: "{a:1}": not valid JSON`}},
		{"overhead ratio", virtv1.KubeVirtSpec{Configuration: virtv1.KubeVirtConfiguration{AdditionalGuestMemoryOverheadRatio: ptr.To("0.5")}},
			[]string{`spec.configuration.additionalGuestMemoryOverheadRatio: Invalid value: "0.5": cannot be smaller than 1.0`}},
		{"overhead ratio not a number", virtv1.KubeVirtSpec{Configuration: virtv1.KubeVirtConfiguration{AdditionalGuestMemoryOverheadRatio: ptr.To("lots")}},
			[]string{`spec.configuration.additionalGuestMemoryOverheadRatio: Invalid value: "lots": cannot be parsed into float`}},
		{"ciphers with TLS 1.3", virtv1.KubeVirtSpec{Configuration: virtv1.KubeVirtConfiguration{TLSConfiguration: &virtv1.TLSConfiguration{
			MinTLSVersion: virtv1.VersionTLS13, Ciphers: []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}}}},
			[]string{"spec.configuration.tlsConfiguration.ciphers: Forbidden: You cannot specify ciphers"}},
		{"unknown cipher", virtv1.KubeVirtSpec{Configuration: virtv1.KubeVirtConfiguration{TLSConfiguration: &virtv1.TLSConfiguration{
			MinTLSVersion: virtv1.VersionTLS12, Ciphers: []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "ROT13"}}}},
			[]string{`spec.configuration.tlsConfiguration.ciphers[1]: Unsupported value: "ROT13"`}},
		{"migration network", virtv1.KubeVirtSpec{Configuration: virtv1.KubeVirtConfiguration{MigrationConfiguration: &virtv1.MigrationConfiguration{
			Network: ptr.To("Migration Net"), ProgressTimeout: ptr.To(int64(-1))}}},
			[]string{"spec.configuration.migrations.progressTimeout: Invalid value: -1: must not be negative",
				`spec.configuration.migrations.network: Invalid value: "Migration Net": NetworkAttachmentDefinition name a lowercase RFC 1123 subdomain`}},
		{"seccomp without a profile", virtv1.KubeVirtSpec{Configuration: virtv1.KubeVirtConfiguration{SeccompConfiguration: &virtv1.SeccompConfiguration{
			VirtualMachineInstanceProfile: &virtv1.VirtualMachineInstanceProfile{}}}},
			[]string{"spec.configuration.seccompConfiguration.virtualMachineInstanceProfile.customProfile: Required value"}},
		{"seccomp with both profiles", virtv1.KubeVirtSpec{Configuration: virtv1.KubeVirtConfiguration{SeccompConfiguration: &virtv1.SeccompConfiguration{
			VirtualMachineInstanceProfile: &virtv1.VirtualMachineInstanceProfile{CustomProfile: &virtv1.CustomProfile{LocalhostProfile: ptr.To("p.json"), RuntimeDefaultProfile: true}}}}},
			[]string{`spec.configuration.seccompConfiguration.virtualMachineInstanceProfile.customProfile.localhostProfile: Invalid value: "p.json": cannot be set when`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := operator.Validate(&virtv1.KubeVirt{Spec: tc.spec})
			if len(errs) != len(tc.want) {
				t.Fatalf("Validate = %v, want %d errors %q", errs, len(tc.want), tc.want)
			}
			for i, e := range errs {
				if !strings.HasPrefix(e.Error(), tc.want[i]) {
					t.Errorf("error %d = %q, want prefix %q", i, e.Error(), tc.want[i])
				}
			}
		})
	}
}

// The bundle keeps an earlier CA until it expires, never twice, and
// drops what is not a CA.
func TestBundle(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	old, err := certs.NewCA("old", now.Add(-6*24*time.Hour), 7*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	expired, err := certs.NewCA("expired", now.Add(-8*24*time.Hour), 7*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cur, err := certs.NewCA("cur", now, 7*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := cur.Issue(certs.Request{CommonName: "c", Client: true, Validity: 24 * time.Hour}, now)
	if err != nil {
		t.Fatal(err)
	}
	previous := append(append(append(old.CertPEM(), expired.CertPEM()...), cur.CertPEM()...), leaf.CertPEM()...)
	got, err := certs.ParseCerts(operator.Bundle(cur, previous, now))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range got {
		names = append(names, c.Subject.CommonName)
	}
	if diff := cmp.Diff([]string{"cur", "old"}, names); diff != "" {
		t.Errorf("bundle (-want +got):\n%s", diff)
	}
}

package export_test

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	virtv1 "kubevirt.io/api/core/v1"
	exportv1 "kubevirt.io/api/export/v1beta1"
	instancetypev1beta1 "kubevirt.io/api/instancetype/v1beta1"
	vmsnapshotv1 "kubevirt.io/api/snapshot/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	exportctl "github.com/virtkit/virtkit/controllers/export"
	"github.com/virtkit/virtkit/deploy/certs"
	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/internal/testenv/kubeenv"
	"github.com/virtkit/virtkit/virt/storage/backendstorage"
	"github.com/virtkit/virtkit/virt/storage/export"
)

const ns = "default"

type env struct {
	c   client.Client
	ctx context.Context
	ca  *certs.Pair
}

func start(t *testing.T, opts ...exportctl.Option) *env {
	t.Helper()
	return startWith(t, func(manager.Manager) []exportctl.Option { return opts })
}

// startWith is start with options made from the manager.
func startWith(t *testing.T, optsOf func(manager.Manager) []exportctl.Option) *env {
	t.Helper()
	cp := kubeenv.ControlPlane(t)
	mgr := kubeenv.NewManager(t, cp)
	ca, err := certs.NewCA("export-ca", time.Now(), 48*time.Hour)
	must(t, err)
	opts := append([]exportctl.Option{exportctl.WithImage("virtkit/virt-exportserver:test", corev1.PullIfNotPresent), exportctl.WithInUseRecheck(200 * time.Millisecond)}, optsOf(mgr)...)
	must(t, exportctl.New(exportctl.CASigner{CA: ca}, opts...).SetupWithManager(mgr))
	kubeenv.RunManager(t, mgr)
	return &env{c: cp.Client, ctx: testenv.Within(t, 2*time.Minute), ca: ca}
}

func (e *env) claim(t *testing.T, name string, ann map[string]string) {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: ann},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	must(t, e.c.Create(e.ctx, pvc))
	pvc.Status.Phase = corev1.ClaimBound
	must(t, e.c.Status().Update(e.ctx, pvc))
}

func (e *env) create(t *testing.T, name string, group *string, kind, source string) *exportv1.VirtualMachineExport {
	t.Helper()
	vme := &exportv1.VirtualMachineExport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"team": "a"}},
		Spec: exportv1.VirtualMachineExportSpec{Source: corev1.TypedLocalObjectReference{APIGroup: group, Kind: kind, Name: source}}}
	must(t, e.c.Create(e.ctx, vme))
	return vme
}

func (e *env) wait(t *testing.T, vme *exportv1.VirtualMachineExport, what string, ok func(*exportv1.VirtualMachineExportStatus) bool) {
	t.Helper()
	testenv.Eventually(e.ctx, t, what, func() (bool, string) {
		if err := e.c.Get(e.ctx, client.ObjectKeyFromObject(vme), vme); err != nil {
			return false, err.Error()
		}
		return vme.Status != nil && ok(vme.Status), fmt.Sprintf("%+v", vme.Status)
	})
}

func ready(st *exportv1.VirtualMachineExportStatus) (corev1.ConditionStatus, string) {
	for _, c := range st.Conditions {
		if c.Type == exportv1.ConditionReady {
			return c.Status, c.Reason
		}
	}
	return "", ""
}

func (e *env) pod(t *testing.T, vme *exportv1.VirtualMachineExport) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	testenv.Eventually(e.ctx, t, "the export server pod", func() (bool, string) {
		err := e.c.Get(e.ctx, client.ObjectKey{Namespace: ns, Name: export.PodName(vme.Name)}, pod)
		return err == nil && pod.DeletionTimestamp == nil, fmt.Sprint(err)
	})
	return pod
}

// playKubelet marks pod running and ready, as a kubelet would.
func (e *env) playKubelet(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	must(t, e.c.Status().Update(e.ctx, pod))
}

// An export of a bound disk claim: its Service, token and certificate,
// and a server pod mounting the claim read-only; Ready with KubeVirt's
// links once the pod is, the link's certificate the CA that signed the
// server's. Another pod using the claim pauses it (the server pod is
// deleted, InUse); once that pod is gone the server comes back.
func TestClaimExport(t *testing.T) {
	e := start(t)
	e.claim(t, "disk", map[string]string{"cdi.kubevirt.io/storage.contentType": "kubevirt"})
	vme := e.create(t, "disk-export", nil, "PersistentVolumeClaim", "disk")

	pod := e.pod(t, vme)
	if got := pod.Spec.Volumes[2].PersistentVolumeClaim; got == nil || got.ClaimName != "disk" || !got.ReadOnly {
		t.Errorf("the pod's claim volume: %+v, want disk read-only", pod.Spec.Volumes[2])
	}
	if m := pod.Spec.Containers[0].VolumeMounts[2]; m.MountPath != "/export-volumes/disk" || !m.ReadOnly {
		t.Errorf("the claim's mount: %+v", m)
	}
	if sc := pod.Spec.SecurityContext; sc == nil || !ptr.Deref(sc.RunAsNonRoot, false) || ptr.Deref(sc.RunAsUser, 0) != 107 {
		t.Errorf("the pod's security context: %+v", sc)
	}
	if !metav1.IsControlledBy(pod, vme) || pod.Labels[export.ServiceSelectorLabel] != "virt-export-disk-export" || pod.Labels["team"] != "a" {
		t.Errorf("the pod's owner and labels: %v %v", pod.OwnerReferences, pod.Labels)
	}
	svc := &corev1.Service{}
	must(t, e.c.Get(e.ctx, client.ObjectKey{Namespace: ns, Name: "virt-export-disk-export"}, svc))
	if svc.Spec.Selector[export.ServiceSelectorLabel] != pod.Labels[export.ServiceSelectorLabel] || svc.Spec.Ports[0].Port != 443 ||
		svc.Spec.Ports[0].TargetPort.IntValue() != 8443 || svc.Labels["kubevirt.io"] != "virt-exporter" {
		t.Errorf("the Service: %+v %+v", svc.Labels, svc.Spec)
	}
	tok := &corev1.Secret{}
	must(t, e.c.Get(e.ctx, client.ObjectKey{Namespace: ns, Name: "export-token-disk-export"}, tok))
	if len(tok.Data["token"]) != 20 || !metav1.IsControlledBy(tok, vme) {
		t.Errorf("the token Secret: %d-byte token, owners %v", len(tok.Data["token"]), tok.OwnerReferences)
	}
	e.wait(t, vme, "Pending while the pod starts", func(st *exportv1.VirtualMachineExportStatus) bool {
		s, r := ready(st)
		return st.Phase == exportv1.Pending && s == corev1.ConditionFalse && r == exportctl.ReasonPodPending
	})
	if ptr.Deref(vme.Status.TokenSecretRef, "") != "export-token-disk-export" || vme.Status.ServiceName != "virt-export-disk-export" ||
		vme.Status.TTLExpirationTime == nil || !vme.Status.TTLExpirationTime.Time.Equal(vme.CreationTimestamp.Add(2*time.Hour)) {
		t.Errorf("status: %+v", vme.Status)
	}

	e.playKubelet(t, pod)
	e.wait(t, vme, "Ready with links", func(st *exportv1.VirtualMachineExportStatus) bool {
		s, r := ready(st)
		return st.Phase == exportv1.Ready && s == corev1.ConditionTrue && r == exportctl.ReasonPodReady && st.Links != nil && st.Links.Internal != nil
	})
	base := "https://virt-export-disk-export.default.svc"
	wantVols := []exportv1.VirtualMachineExportVolume{{Name: "disk", Formats: []exportv1.VirtualMachineExportVolumeFormat{
		{Format: exportv1.KubeVirtRaw, Url: base + "/volumes/disk/disk.img"}, {Format: exportv1.KubeVirtGz, Url: base + "/volumes/disk/disk.img.gz"}}}}
	if d := cmp.Diff(wantVols, vme.Status.Links.Internal.Volumes); d != "" {
		t.Errorf("internal volume links (-want +got):\n%s", d)
	}
	if vme.Status.Links.External != nil {
		t.Errorf("external links without an export proxy: %+v", vme.Status.Links.External)
	}
	// The server's certificate is signed by the CA the link names, for
	// the Service's name.
	cs := &corev1.Secret{}
	must(t, e.c.Get(e.ctx, client.ObjectKey{Namespace: ns, Name: export.CertSecretName(vme.Name)}, cs))
	block, _ := pem.Decode(cs.Data[corev1.TLSCertKey])
	leaf, err := x509.ParseCertificate(block.Bytes)
	must(t, err)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM([]byte(vme.Status.Links.Internal.Cert))
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "virt-export-disk-export.default.svc"}); err != nil {
		t.Errorf("the server certificate against the link's: %v", err)
	}

	// Another pod takes the claim: the export pauses.
	user := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "user"}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
		Volumes:    []corev1.Volume{{Name: "d", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "disk"}}}}}}
	must(t, e.c.Create(e.ctx, user))
	e.wait(t, vme, "Pending, the claim in use", func(st *exportv1.VirtualMachineExportStatus) bool {
		s, r := ready(st)
		return st.Phase == exportv1.Pending && s == corev1.ConditionFalse && r == exportctl.ReasonInUse && st.Links.Internal == nil
	})
	testenv.Eventually(e.ctx, t, "the server pod deleted", func() (bool, string) {
		p := &corev1.Pod{}
		err := e.c.Get(e.ctx, client.ObjectKey{Namespace: ns, Name: export.PodName(vme.Name)}, p)
		return apierrors.IsNotFound(err) || p.DeletionTimestamp != nil, fmt.Sprint(err)
	})
	must(t, e.c.Delete(e.ctx, user, client.GracePeriodSeconds(0)))
	// The deleted server pod has no kubelet to finalize it here.
	old := &corev1.Pod{}
	if err := e.c.Get(e.ctx, client.ObjectKey{Namespace: ns, Name: export.PodName(vme.Name)}, old); err == nil {
		must(t, client.IgnoreNotFound(e.c.Delete(e.ctx, old, client.GracePeriodSeconds(0))))
	}
	back := e.pod(t, vme)
	if back.UID == pod.UID {
		t.Errorf("the server pod was not made again")
	}
}

// A file system claim with no content type is an archive; a claim
// export's spec may name its own token Secret; an unsupported source is
// Skipped with the field named.
func TestArchiveOwnTokenAndUnsupported(t *testing.T) {
	e := start(t)
	e.claim(t, "files", nil)
	vme := &exportv1.VirtualMachineExport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "files"},
		Spec: exportv1.VirtualMachineExportSpec{Source: corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "files"},
			TokenSecretRef: ptr.To("mine"), TTLDuration: &metav1.Duration{Duration: time.Hour}}}
	must(t, e.c.Create(e.ctx, vme))
	pod := e.pod(t, vme)
	if s := pod.Spec.Volumes[1].Secret; s == nil || s.SecretName != "mine" {
		t.Errorf("the token volume: %+v, want Secret mine", pod.Spec.Volumes[1])
	}
	if err := e.c.Get(e.ctx, client.ObjectKey{Namespace: ns, Name: "export-token-files"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("the controller's token Secret for an export naming its own: %v, want none", err)
	}
	e.playKubelet(t, pod)
	e.wait(t, vme, "Ready", func(st *exportv1.VirtualMachineExportStatus) bool { return st.Phase == exportv1.Ready })
	if f := vme.Status.Links.Internal.Volumes[0].Formats; len(f) != 2 || f[0].Format != exportv1.Dir || f[1].Format != exportv1.ArchiveGz {
		t.Errorf("an archive claim's formats: %+v", f)
	}
	if !vme.Status.TTLExpirationTime.Time.Equal(vme.CreationTimestamp.Add(time.Hour)) || ptr.Deref(vme.Status.TokenSecretRef, "") != "mine" {
		t.Errorf("status: TTL %v, token %v", vme.Status.TTLExpirationTime, vme.Status.TokenSecretRef)
	}

	odd := e.create(t, "odd", ptr.To("apps"), "Deployment", "s")
	e.wait(t, odd, "Skipped", func(st *exportv1.VirtualMachineExportStatus) bool {
		s, r := ready(st)
		return st.Phase == exportv1.Skipped && s == corev1.ConditionFalse && r == exportctl.ReasonSourceNotServed
	})
	if _, msg := readyMessage(odd.Status); !strings.Contains(msg, "spec.source") {
		t.Errorf("the message %q does not name spec.source", msg)
	}
}

func readyMessage(st *exportv1.VirtualMachineExportStatus) (string, string) {
	for _, c := range st.Conditions {
		if c.Type == exportv1.ConditionReady {
			return c.Reason, c.Message
		}
	}
	return "", ""
}

// A VM export: Skipped while the VM is missing (VMNotFound); once it
// exists and runs, Pending (InUse, "is running"); stopped, served with the
// VM's name in the status.
func TestVMExport(t *testing.T) {
	writes, reads := &kubeenv.WriteCounter{}, &readCounter{}
	e := startWith(t, func(mgr manager.Manager) []exportctl.Option {
		writes.Client, reads.Reader = mgr.GetClient(), mgr.GetAPIReader()
		return []exportctl.Option{exportctl.WithClient(writes), exportctl.WithAPIReader(reads)}
	})
	vme := e.create(t, "vm-export", ptr.To("kubevirt.io"), "VirtualMachine", "vm")
	e.wait(t, vme, "Skipped: no VM", func(st *exportv1.VirtualMachineExportStatus) bool {
		s, r := ready(st)
		return st.Phase == exportv1.Skipped && s == corev1.ConditionFalse && r == exportctl.ReasonVMNotFound
	})
	e.claim(t, "data", map[string]string{"cdi.kubevirt.io/storage.contentType": "kubevirt"})
	vm := &virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vm"},
		Spec: virtv1.VirtualMachineSpec{RunStrategy: ptr.To(virtv1.RunStrategyHalted), Template: &virtv1.VirtualMachineInstanceTemplateSpec{
			Spec: virtv1.VirtualMachineInstanceSpec{Domain: virtv1.DomainSpec{Devices: virtv1.Devices{Disks: []virtv1.Disk{{Name: "data"}}}},
				Volumes: []virtv1.Volume{{Name: "data", VolumeSource: virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
					PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}}}}}
	vmi := &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vm"}, Spec: vm.Spec.Template.Spec}
	must(t, e.c.Create(e.ctx, vmi))
	must(t, e.c.Create(e.ctx, vm))
	e.wait(t, vme, "Pending: the VM runs", func(st *exportv1.VirtualMachineExportStatus) bool {
		r, msg := readyMessage(st)
		return st.Phase == exportv1.Pending && r == exportctl.ReasonInUse && msg == "Virtual Machine default/vm is running"
	})
	if err := e.c.Get(e.ctx, client.ObjectKey{Namespace: ns, Name: export.PodName(vme.Name)}, &corev1.Pod{}); !apierrors.IsNotFound(err) {
		t.Errorf("a server pod while the VM runs: %v", err)
	}
	must(t, e.c.Delete(e.ctx, vmi))
	pod := e.pod(t, vme)
	e.playKubelet(t, pod)
	e.wait(t, vme, "Ready", func(st *exportv1.VirtualMachineExportStatus) bool { return st.Phase == exportv1.Ready })
	if ptr.Deref(vme.Status.VirtualMachineName, "") != "vm" || len(vme.Status.Links.Internal.Volumes) != 1 ||
		vme.Status.Links.Internal.Manifests[0].Type != exportv1.AllManifests {
		t.Errorf("status: %+v", vme.Status)
	}
	// The VM's manifests, for the server to serve: the VM, and a
	// DataVolume importing its claim from the export.
	cm := &corev1.ConfigMap{}
	must(t, e.c.Get(e.ctx, client.ObjectKey{Namespace: ns, Name: "exporter-vm-manifest-vm-export"}, cm))
	internal := cm.Data[export.ManifestFile(export.Internal)]
	if !metav1.IsControlledBy(cm, vme) || !strings.Contains(internal, `"kind":"VirtualMachine"`) ||
		!strings.Contains(internal, `"url":"https://virt-export-vm-export.default.svc/volumes/data/disk.img.gz"`) {
		t.Errorf("the manifests' ConfigMap: owners %v, internal %s", cm.OwnerReferences, internal)
	}
	if v := pod.Spec.Volumes[len(pod.Spec.Volumes)-1]; v.ConfigMap == nil || v.ConfigMap.Name != cm.Name {
		t.Errorf("the pod does not mount the manifests: %+v", v)
	}

	// A ready export reconciled again (here for changes of its claim's
	// labels, which its manifests do not carry) writes nothing and reads
	// only the cache.
	before, readsBefore, done := len(writes.Writes(ns)), reads.count(), reconciles(t)
	claim := &corev1.PersistentVolumeClaim{}
	for i := range 5 {
		must(t, e.c.Get(e.ctx, client.ObjectKey{Namespace: ns, Name: "data"}, claim))
		claim.Labels = map[string]string{"touched": fmt.Sprint(i)}
		must(t, e.c.Update(e.ctx, claim))
		testenv.Eventually(e.ctx, t, "a reconcile of the touched claim's export", func() (bool, string) {
			n := reconciles(t)
			return n > done, fmt.Sprint(n)
		})
		done = reconciles(t)
	}
	if w := writes.Writes(ns)[before:]; len(w) != 0 {
		t.Errorf("a ready export's reconciles wrote %v", w)
	}
	if n := reads.count() - readsBefore; n != 0 {
		t.Errorf("a ready export's reconciles made %d uncached reads", n)
	}
}

// readCounter counts the reads made through it.
type readCounter struct {
	client.Reader
	n atomic.Int64
}

func (r *readCounter) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.n.Add(1)
	return r.Reader.Get(ctx, key, obj, opts...)
}

func (r *readCounter) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	r.n.Add(1)
	return r.Reader.List(ctx, list, opts...)
}

func (r *readCounter) count() int64 { return r.n.Load() }

// reconciles is how many reconciles of exports have ended in this
// process, by controller-runtime's metric.
func reconciles(t *testing.T) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	must(t, err)
	var n float64
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == "virtualmachineexport" {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return n
}

// A snapshot export: Skipped without the snapshot; waiting while it is not
// ready to use; then each backed-up claim is restored from its
// VolumeSnapshot into a claim the export owns (<export>-<claim>, a disk
// image), the server pod mounts it, and the links name the backed-up
// claim, with the VM's name in the status.
func TestSnapshotExport(t *testing.T) {
	e := start(t)
	vme := e.create(t, "snap-export", ptr.To("snapshot.kubevirt.io"), "VirtualMachineSnapshot", "snap")
	e.wait(t, vme, "Skipped: no snapshot", func(st *exportv1.VirtualMachineExportStatus) bool {
		s, r := ready(st)
		return st.Phase == exportv1.Skipped && s == corev1.ConditionFalse && r == exportctl.ReasonSnapshotNotFound
	})
	vm := &virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vm"},
		Spec: virtv1.VirtualMachineSpec{Template: &virtv1.VirtualMachineInstanceTemplateSpec{Spec: virtv1.VirtualMachineInstanceSpec{
			Volumes: []virtv1.Volume{{Name: "data", VolumeSource: virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
				PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}}}}}
	content := &vmsnapshotv1.VirtualMachineSnapshotContent{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "snap-content"},
		Spec: vmsnapshotv1.VirtualMachineSnapshotContentSpec{
			Source: vmsnapshotv1.SourceSpec{VirtualMachine: &vmsnapshotv1.VirtualMachine{ObjectMeta: vm.ObjectMeta, Spec: vm.Spec}},
			VolumeBackups: []vmsnapshotv1.VolumeBackup{{VolumeName: "data", VolumeSnapshotName: ptr.To("vs-data"),
				PersistentVolumeClaim: vmsnapshotv1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data",
					Annotations: map[string]string{"cdi.kubevirt.io/storage.contentType": "kubevirt", "pv.kubernetes.io/bind-completed": "yes"}},
					Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, VolumeName: "pv-old",
						Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}}}}}
	must(t, e.c.Create(e.ctx, content))
	snap := &vmsnapshotv1.VirtualMachineSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "snap"},
		Spec: vmsnapshotv1.VirtualMachineSnapshotSpec{Source: corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: "vm"}}}
	must(t, e.c.Create(e.ctx, snap))
	e.wait(t, vme, "waiting for the snapshot", func(st *exportv1.VirtualMachineExportStatus) bool {
		s, r := ready(st)
		return st.Phase == exportv1.Pending && s == corev1.ConditionFalse && r == exportctl.ReasonSnapshotNotReady
	})
	snap.Status = &vmsnapshotv1.VirtualMachineSnapshotStatus{ReadyToUse: ptr.To(true), VirtualMachineSnapshotContentName: ptr.To("snap-content")}
	must(t, e.c.Status().Update(e.ctx, snap))

	pod := e.pod(t, vme)
	claim := &corev1.PersistentVolumeClaim{}
	must(t, e.c.Get(e.ctx, client.ObjectKey{Namespace: ns, Name: "snap-export-data"}, claim))
	if ds := claim.Spec.DataSource; ds == nil || ds.Kind != "VolumeSnapshot" || ds.Name != "vs-data" || claim.Spec.VolumeName != "" ||
		!metav1.IsControlledBy(claim, vme) || claim.Annotations["cdi.kubevirt.io/storage.contentType"] != "kubevirt" ||
		claim.Annotations["pv.kubernetes.io/bind-completed"] != "" {
		t.Errorf("the restored claim: %+v %+v", claim.ObjectMeta, claim.Spec)
	}
	if got := pod.Spec.Volumes[2].PersistentVolumeClaim; got == nil || got.ClaimName != "snap-export-data" {
		t.Errorf("the pod's claim: %+v", pod.Spec.Volumes[2])
	}
	e.playKubelet(t, pod)
	e.wait(t, vme, "Ready", func(st *exportv1.VirtualMachineExportStatus) bool { return st.Phase == exportv1.Ready })
	vols := vme.Status.Links.Internal.Volumes
	if len(vols) != 1 || vols[0].Name != "data" || !strings.HasSuffix(vols[0].Formats[1].Url, "/volumes/snap-export-data/disk.img.gz") ||
		ptr.Deref(vme.Status.VirtualMachineName, "") != "vm" {
		t.Errorf("links %+v, VM %v", vols, vme.Status.VirtualMachineName)
	}
	created := false
	for _, c := range vme.Status.Conditions {
		created = created || (c.Type == exportv1.ConditionVolumesCreated && c.Status == corev1.ConditionTrue)
	}
	if !created {
		t.Errorf("no VolumesCreated condition: %+v", vme.Status.Conditions)
	}
}

// A VM sized by a cluster instancetype is exported with the instancetype
// written into its template, as KubeVirt's manifests carry it: the cluster
// it is recreated in may not have the instancetype.
func TestVMExportExpandsInstancetype(t *testing.T) {
	e := start(t)
	it := &instancetypev1beta1.VirtualMachineClusterInstancetype{ObjectMeta: metav1.ObjectMeta{Name: "export-small"},
		Spec: instancetypev1beta1.VirtualMachineInstancetypeSpec{CPU: instancetypev1beta1.CPUInstancetype{Guest: 3},
			Memory: instancetypev1beta1.MemoryInstancetype{Guest: resource.MustParse("320Mi")}}}
	must(t, e.c.Create(e.ctx, it))
	e.claim(t, "sized-data", map[string]string{"cdi.kubevirt.io/storage.contentType": "kubevirt"})
	vm := &virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sized"},
		Spec: virtv1.VirtualMachineSpec{RunStrategy: ptr.To(virtv1.RunStrategyHalted),
			Instancetype: &virtv1.InstancetypeMatcher{Name: it.Name, Kind: "VirtualMachineClusterInstancetype"},
			Template: &virtv1.VirtualMachineInstanceTemplateSpec{Spec: virtv1.VirtualMachineInstanceSpec{
				Volumes: []virtv1.Volume{{Name: "data", VolumeSource: virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
					PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "sized-data"}}}}}}}}}
	must(t, e.c.Create(e.ctx, vm))
	vme := e.create(t, "sized-export", ptr.To("kubevirt.io"), "VirtualMachine", "sized")
	e.playKubelet(t, e.pod(t, vme))
	e.wait(t, vme, "Ready", func(st *exportv1.VirtualMachineExportStatus) bool { return st.Phase == exportv1.Ready })
	cm := &corev1.ConfigMap{}
	must(t, e.c.Get(e.ctx, client.ObjectKey{Namespace: ns, Name: "exporter-vm-manifest-sized-export"}, cm))
	var docs []json.RawMessage
	must(t, json.Unmarshal([]byte(cm.Data[export.ManifestFile(export.Internal)]), &docs))
	var got *virtv1.VirtualMachine
	for _, doc := range docs {
		v := &virtv1.VirtualMachine{}
		if err := json.Unmarshal(doc, v); err == nil && v.Kind == "VirtualMachine" {
			got = v
		}
	}
	if got == nil {
		t.Fatalf("no VirtualMachine in the manifests:\n%s", cm.Data[export.ManifestFile(export.Internal)])
	}
	d := got.Spec.Template.Spec.Domain
	if got.Spec.Instancetype != nil || d.CPU == nil || d.CPU.Sockets*d.CPU.Cores*d.CPU.Threads != 3 ||
		d.Memory == nil || d.Memory.Guest == nil || d.Memory.Guest.Cmp(resource.MustParse("320Mi")) != 0 {
		t.Errorf("exported VM: instancetype %+v, cpu %+v, memory %+v; want none, 3 vCPUs and 320Mi written in", got.Spec.Instancetype, d.CPU, d.Memory)
	}
	if len(got.Spec.DataVolumeTemplates) != 0 || len(got.Spec.Template.Spec.Volumes) != 1 || len(d.Devices.Disks) != 1 {
		t.Errorf("exported VM: volumes %+v, disks %+v; want its one volume and a disk for it", got.Spec.Template.Spec.Volumes, d.Devices.Disks)
	}
}

// A stopped VM with a persistent vTPM is exported with its backend-storage
// claim, as KubeVirt's exports serve it: an archive (dir and tar.gz
// links) named by the claim, mounted by the server pod, and no DataVolume
// for it in the manifests, which re-import only the VM's disks. A snapshot
// of the VM that backed the claim up is exported the same way, from a
// restored claim that is not labelled as the VM's.
func TestVMExportBackendStorage(t *testing.T) {
	e := start(t)
	e.claim(t, "disk", map[string]string{"cdi.kubevirt.io/storage.contentType": "kubevirt"})
	state := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "persistent-state-for-tpm-x7k2p",
		Labels: map[string]string{backendstorage.LabelVM: "tpm"}},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Mi")}}}}
	must(t, e.c.Create(e.ctx, state))
	state.Status.Phase = corev1.ClaimBound
	must(t, e.c.Status().Update(e.ctx, state))
	vm := &virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tpm"},
		Spec: virtv1.VirtualMachineSpec{RunStrategy: ptr.To(virtv1.RunStrategyHalted), Template: &virtv1.VirtualMachineInstanceTemplateSpec{
			Spec: virtv1.VirtualMachineInstanceSpec{Domain: virtv1.DomainSpec{Devices: virtv1.Devices{Disks: []virtv1.Disk{{Name: "disk"}},
				TPM: &virtv1.TPMDevice{Persistent: ptr.To(true)}}},
				Volumes: []virtv1.Volume{{Name: "disk", VolumeSource: virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
					PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "disk"}}}}}}}}}
	must(t, e.c.Create(e.ctx, vm))

	vme := e.create(t, "tpm-export", ptr.To("kubevirt.io"), "VirtualMachine", "tpm")
	pod := e.pod(t, vme)
	var mounted []string
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			mounted = append(mounted, v.PersistentVolumeClaim.ClaimName)
		}
	}
	if diff := cmp.Diff([]string{"disk", state.Name}, mounted); diff != "" {
		t.Errorf("the server pod's claims (-want +got):\n%s", diff)
	}
	e.playKubelet(t, pod)
	e.wait(t, vme, "Ready", func(st *exportv1.VirtualMachineExportStatus) bool { return st.Phase == exportv1.Ready })
	formats := map[string][]exportv1.ExportVolumeFormat{}
	for _, v := range vme.Status.Links.Internal.Volumes {
		for _, f := range v.Formats {
			formats[v.Name] = append(formats[v.Name], f.Format)
		}
	}
	want := map[string][]exportv1.ExportVolumeFormat{"disk": {exportv1.KubeVirtRaw, exportv1.KubeVirtGz}, state.Name: {exportv1.Dir, exportv1.ArchiveGz}}
	if diff := cmp.Diff(want, formats); diff != "" {
		t.Errorf("the links' volumes and formats (-want +got):\n%s", diff)
	}
	cm := &corev1.ConfigMap{}
	must(t, e.c.Get(e.ctx, client.ObjectKey{Namespace: ns, Name: "exporter-vm-manifest-tpm-export"}, cm))
	internal := cm.Data[export.ManifestFile(export.Internal)]
	if !strings.Contains(internal, "/volumes/disk/disk.img.gz") || strings.Contains(internal, state.Name) {
		t.Errorf("the manifests import the disk and not the backend storage: %s", internal)
	}

	// The snapshot's backup of the claim, exported.
	content := &vmsnapshotv1.VirtualMachineSnapshotContent{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tpm-content"},
		Spec: vmsnapshotv1.VirtualMachineSnapshotContentSpec{
			Source: vmsnapshotv1.SourceSpec{VirtualMachine: &vmsnapshotv1.VirtualMachine{ObjectMeta: vm.ObjectMeta, Spec: vm.Spec}},
			VolumeBackups: []vmsnapshotv1.VolumeBackup{{VolumeName: backendstorage.SnapshotVolumeName("tpm"), VolumeSnapshotName: ptr.To("vs-state"),
				PersistentVolumeClaim: vmsnapshotv1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: state.Name, Labels: state.Labels},
					Spec: state.Spec}}}}}
	must(t, e.c.Create(e.ctx, content))
	snap := &vmsnapshotv1.VirtualMachineSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tpm-snap"},
		Spec: vmsnapshotv1.VirtualMachineSnapshotSpec{Source: corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: "tpm"}}}
	must(t, e.c.Create(e.ctx, snap))
	snap.Status = &vmsnapshotv1.VirtualMachineSnapshotStatus{ReadyToUse: ptr.To(true), VirtualMachineSnapshotContentName: ptr.To("tpm-content")}
	must(t, e.c.Status().Update(e.ctx, snap))
	svme := e.create(t, "tpm-snap-export", ptr.To("snapshot.kubevirt.io"), "VirtualMachineSnapshot", "tpm-snap")
	spod := e.pod(t, svme)
	restored := &corev1.PersistentVolumeClaim{}
	must(t, e.c.Get(e.ctx, client.ObjectKey{Namespace: ns, Name: export.ClaimName(svme.Name, state.Name)}, restored))
	if _, ok := restored.Labels[backendstorage.LabelVM]; ok || restored.Annotations["cdi.kubevirt.io/storage.contentType"] != "" {
		t.Errorf("the restored state claim passes for the VM's, or for a disk: %+v", restored.ObjectMeta)
	}
	e.playKubelet(t, spod)
	e.wait(t, svme, "Ready", func(st *exportv1.VirtualMachineExportStatus) bool { return st.Phase == exportv1.Ready })
	vols := svme.Status.Links.Internal.Volumes
	if len(vols) != 1 || vols[0].Name != state.Name || len(vols[0].Formats) != 2 || vols[0].Formats[1].Format != exportv1.ArchiveGz {
		t.Errorf("the snapshot export's links: %+v", vols)
	}
}

package datavolume

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/virtkit/virtkit/controllers/cdiconfig"
	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/internal/testenv/kubeenv"
	"github.com/virtkit/virtkit/virt/storage/dvspec"
	"github.com/virtkit/virtkit/virt/storage/importer/contract"
)

// fixedProgress reports the same progress for every pod.
type fixedProgress float64

func (p fixedProgress) Progress(context.Context, *corev1.Pod, string) (float64, bool, error) {
	return float64(p), true, nil
}

// cluster is a real apiserver with the DataVolume controller running; the
// test plays the provisioner (binding claims) and the kubelet (pod
// statuses).
type cluster struct {
	c      client.Client
	events *record.FakeRecorder
}

func startCluster(t *testing.T) *cluster {
	env := kubeenv.ControlPlane(t)
	mgr := kubeenv.NewManager(t, env)
	cl := &cluster{c: env.Client, events: record.NewFakeRecorder(1000)}
	r := New(WithPodOptions(PodOptions{Image: "virtkit/virt-importer:test", UploadClientCA: []byte(testClientCA), UploadClientName: "proxy"}), WithEventRecorder(cl.events), WithProgress(fixedProgress(37.5)),
		WithNamespace(installNamespace))
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	kubeenv.RunManager(t, mgr)
	return cl
}

// installNamespace is where the controller reads the import proxy's CAs.
const installNamespace = "kubevirt"

func (cl *cluster) namespace(t *testing.T, name string) string {
	t.Helper()
	if err := cl.c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	return name
}

func (cl *cluster) dv(ctx context.Context, t *testing.T, key client.ObjectKey) *cdiv1.DataVolume {
	t.Helper()
	dv := &cdiv1.DataVolume{}
	if err := cl.c.Get(ctx, key, dv); err != nil {
		t.Fatal(err)
	}
	return dv
}

func (cl *cluster) waitPhase(ctx context.Context, t *testing.T, key client.ObjectKey, phase cdiv1.DataVolumePhase) *cdiv1.DataVolume {
	t.Helper()
	var dv *cdiv1.DataVolume
	testenv.Eventually(ctx, t, fmt.Sprintf("DataVolume %s %s", key, phase), func() (bool, string) {
		dv = cl.dv(ctx, t, key)
		return dv.Status.Phase == phase, fmt.Sprintf("%+v", dv.Status)
	})
	return dv
}

// bind plays the provisioner: the claim is Bound with its request as capacity.
func (cl *cluster) bind(ctx context.Context, t *testing.T, key client.ObjectKey) *corev1.PersistentVolumeClaim {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{}
	testenv.Eventually(ctx, t, "the claim "+key.String(), func() (bool, string) {
		err := cl.c.Get(ctx, key, pvc)
		return err == nil, fmt.Sprint(err)
	})
	pvc.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, AccessModes: pvc.Spec.AccessModes,
		Capacity: corev1.ResourceList{corev1.ResourceStorage: pvc.Spec.Resources.Requests[corev1.ResourceStorage]}}
	if err := cl.c.Status().Update(ctx, pvc); err != nil {
		t.Fatal(err)
	}
	return pvc
}

// sourceClaim makes a bound 64 MiB claim ns/name of class ("" none).
func (cl *cluster) sourceClaim(ctx context.Context, t *testing.T, ns, name, class string) *corev1.PersistentVolumeClaim {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")}}}}
	if class != "" {
		pvc.Spec.StorageClassName = &class
	}
	if err := cl.c.Create(ctx, pvc); err != nil {
		t.Fatal(err)
	}
	return cl.bind(ctx, t, client.ObjectKeyFromObject(pvc))
}

// usedBy makes a launcher pod using the claim ns/claim.
func (cl *cluster) usedBy(ctx context.Context, t *testing.T, ns, claim string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "virt-launcher-" + claim},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "compute", Image: "x"}},
			Volumes: []corev1.Volume{{Name: "disk", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}}}
	if err := cl.c.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

// podStatus plays the kubelet: it waits for the importer pod and gives it st.
func (cl *cluster) podStatus(ctx context.Context, t *testing.T, key client.ObjectKey, st corev1.PodStatus) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	testenv.Eventually(ctx, t, "the importer pod "+key.String(), func() (bool, string) {
		err := cl.c.Get(ctx, key, pod)
		return err == nil, fmt.Sprint(err)
	})
	pod.Status = st
	if err := cl.c.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

func running() corev1.PodStatus {
	return corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.9", ContainerStatuses: []corev1.ContainerStatus{{Name: "importer", Ready: true,
		Image: "virtkit/virt-importer:test", ImageID: "x", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}}}
}

// readyPod is running() with the pod's Ready condition: an upload server
// that takes connections.
func readyPod() corev1.PodStatus {
	st := running()
	st.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	return st
}

func finished(out contract.Outcome) corev1.PodStatus {
	return corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{{Name: "importer",
		Image: "virtkit/virt-importer:test", ImageID: "x",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed", Message: string(out.Marshal()),
			StartedAt: metav1.Now(), FinishedAt: metav1.Now()}}}}}
}

// TestImportLifecycle: a DataVolume of an http source goes Pending (its
// claim made, owned by it, with the file system's overhead), then
// ImportScheduled (the importer pod made once the claim is bound, with the
// claim's usable size, no scratch space), ImportInProgress with the
// importer's progress; the importer asks for scratch space and a new pod
// gets a scratch claim; Succeeded once that pod ends well: the claim is
// marked filled, the pod and its scratch claim deleted. Deleting the DataVolume leaves the claim to the garbage
// collector through its owner reference.
func TestImportLifecycle(t *testing.T) {
	cl := startCluster(t)
	ctx := testenv.Within(t, 60*time.Second)
	ns := cl.namespace(t, "import")
	dv := httpDV(ns, "disk", "https://images.example.com/disk.qcow2")
	dv.UID = ""
	if err := cl.c.Create(ctx, dv); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(dv)
	cl.waitPhase(ctx, t, key, cdiv1.Pending)
	pvc := cl.bind(ctx, t, key)
	if !metav1.IsControlledBy(pvc, dv) {
		t.Errorf("claim owners %+v, want the DataVolume", pvc.OwnerReferences)
	}
	if got, want := pvc.Spec.Resources.Requests[corev1.ResourceStorage], resource.MustParse("71135396"); got.Cmp(want) != 0 {
		t.Errorf("claim size %s, want %s (64 MiB and the overhead)", got.String(), want.String())
	}
	podKey := client.ObjectKey{Namespace: ns, Name: "importer-disk"}
	cl.waitPhase(ctx, t, key, cdiv1.ImportScheduled)
	pod := cl.podStatus(ctx, t, podKey, running())
	args, err := contract.Parse(pod.Spec.Containers[0].Command[1:], nil)
	if err != nil {
		t.Fatal(err)
	}
	if args.URL != dv.Spec.Source.HTTP.URL || args.Size != 64<<20 || args.Target != "/data/disk.img" {
		t.Errorf("importer args %+v, want the URL and a 64 MiB /data/disk.img", args)
	}
	got := cl.waitPhase(ctx, t, key, cdiv1.ImportInProgress)
	testenv.Eventually(ctx, t, "the progress", func() (bool, string) {
		got = cl.dv(ctx, t, key)
		return got.Status.Progress == "37.50%", string(got.Status.Progress)
	})

	// The image is a qcow2 and the pod has no scratch space: it says so,
	// and the next pod gets a scratch claim.
	if args.Scratch != "" {
		t.Errorf("the first importer pod has scratch space %q, want none until it asks", args.Scratch)
	}
	cl.podStatus(ctx, t, podKey, finished(contract.Outcome{Message: "scratch space required", Reason: contract.ReasonScratchRequired, ScratchRequired: true}))
	scratchKey := client.ObjectKey{Namespace: ns, Name: "disk-scratch"}
	scratch := &corev1.PersistentVolumeClaim{}
	testenv.Eventually(ctx, t, "a new importer pod with a scratch claim", func() (bool, string) {
		p := &corev1.Pod{}
		if err := cl.c.Get(ctx, podKey, p); err != nil || p.UID == pod.UID {
			return false, fmt.Sprint("pod: ", err)
		}
		if err := cl.c.Get(ctx, scratchKey, scratch); err != nil {
			return false, fmt.Sprint("scratch claim: ", err)
		}
		pod = p
		return mountsScratch(p) && metav1.IsControlledBy(scratch, p), fmt.Sprintf("volumes %+v, scratch owners %+v", p.Spec.Volumes, scratch.OwnerReferences)
	})
	if got := cl.dv(ctx, t, key); got.Status.Phase == cdiv1.Failed || got.Status.Phase == cdiv1.Succeeded {
		t.Errorf("phase %s after the importer asked for scratch space", got.Status.Phase)
	}
	if size := scratch.Spec.Resources.Requests[corev1.ResourceStorage]; size.Value() < 64<<20 {
		t.Errorf("scratch claim of %s, want room for the 64 MiB disk", size.String())
	}
	cl.podStatus(ctx, t, podKey, running())
	cl.podStatus(ctx, t, podKey, finished(contract.Outcome{Message: "Import Complete", Format: "qcow2"}))
	got = cl.waitPhase(ctx, t, key, cdiv1.Succeeded)
	if got.Status.Progress != "100.0%" || got.Status.ClaimName != "disk" {
		t.Errorf("status %+v, want 100.0%% of claim disk", got.Status)
	}
	testenv.Eventually(ctx, t, "the importer pod and its scratch claim gone, the claim marked", func() (bool, string) {
		perr := cl.c.Get(ctx, podKey, &corev1.Pod{})
		serr := cl.c.Get(ctx, scratchKey, scratch)
		_ = cl.c.Get(ctx, key, pvc)
		// The apiserver's claim protection keeps a deleted claim until a
		// controller this test does not run lets it go.
		gone := apierrors.IsNotFound(serr) || serr == nil && scratch.DeletionTimestamp != nil
		return apierrors.IsNotFound(perr) && gone && pvc.Annotations[dvspec.AnnPopulatedFor] == "disk" && pvc.Annotations[dvspec.AnnRequiresScratch] == "true",
			fmt.Sprintf("pod: %v, scratch: %v, claim: %v", perr, serr, pvc.Annotations)
	})
	wantEvents(t, cl.events, ReasonImportScheduled, ReasonImportInProgress, ReasonImportSucceeded)
}

// testClientCA stands for the upload proxy's client CA, which the
// controller copies into upload pods' Secrets without reading it.
const testClientCA = "-----BEGIN CERTIFICATE-----\nproxy CA\n-----END CERTIFICATE-----\n"

// TestUploadLifecycle: a DataVolume of an upload source gets a claim marked
// for upload, then an upload pod named as CDI's with a Secret of its own
// key and the proxy's CA, the pod's certificate published on the pod. It
// is UploadScheduled until the pod is ready, UploadReady then, with the
// pod's phase and readiness mirrored on the claim (what KubeVirt's virtctl
// waits on), and Succeeded once the pod ends well; the pod, its Secret and
// its scratch claim (uploads always get one, as CDI's) are then deleted.
func TestUploadLifecycle(t *testing.T) {
	cl := startCluster(t)
	ctx := testenv.Within(t, 60*time.Second)
	ns := cl.namespace(t, "upload")
	dv := httpDV(ns, "up", "", func(dv *cdiv1.DataVolume) {
		dv.UID = ""
		dv.Spec.Source = &cdiv1.DataVolumeSource{Upload: &cdiv1.DataVolumeSourceUpload{}}
	})
	if err := cl.c.Create(ctx, dv); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(dv)
	pvc := cl.bind(ctx, t, key)
	if _, ok := pvc.Annotations[dvspec.AnnUploadRequest]; !ok {
		t.Errorf("claim annotations %v, want %s", pvc.Annotations, dvspec.AnnUploadRequest)
	}
	cl.waitPhase(ctx, t, key, cdiv1.UploadScheduled)
	podKey := client.ObjectKey{Namespace: ns, Name: "cdi-upload-up"}
	notReady := running()
	notReady.ContainerStatuses[0].Ready = false
	pod := cl.podStatus(ctx, t, podKey, notReady)
	sec := &corev1.Secret{}
	if err := cl.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cdi-upload-up-tls"}, sec); err != nil {
		t.Fatal(err)
	}
	if string(sec.Data[corev1.ServiceAccountRootCAKey]) != testClientCA || len(sec.Data[corev1.TLSPrivateKeyKey]) == 0 ||
		string(sec.Data[corev1.TLSCertKey]) != pod.Annotations[contract.AnnUploadServerCert] {
		t.Errorf("upload secret %v and pod annotations %v: want the proxy's CA, a key, and the pod's certificate on the pod", sec.Data, pod.Annotations)
	}
	args, err := contract.Parse(pod.Spec.Containers[0].Command[1:], nil)
	if err != nil {
		t.Fatal(err)
	}
	if args.Source != contract.SourceUpload || args.ClientName != "proxy" || args.Target != "/data/disk.img" || args.Scratch != contract.ScratchDir {
		t.Errorf("upload server args %+v, want an upload source for client proxy into /data/disk.img with scratch space", args)
	}
	scratchKey := client.ObjectKey{Namespace: ns, Name: "up-scratch"}
	scratch := &corev1.PersistentVolumeClaim{}
	testenv.Eventually(ctx, t, "the upload pod's scratch claim", func() (bool, string) {
		err := cl.c.Get(ctx, scratchKey, scratch)
		return err == nil && metav1.IsControlledBy(scratch, pod), fmt.Sprint(err, scratch.OwnerReferences)
	})
	ready := readyPod()
	cl.podStatus(ctx, t, podKey, ready)
	cl.waitPhase(ctx, t, key, cdiv1.UploadReady)
	testenv.Eventually(ctx, t, "the claim saying the pod is ready", func() (bool, string) {
		_ = cl.c.Get(ctx, key, pvc)
		return pvc.Annotations[dvspec.AnnPodReady] == "true" && pvc.Annotations[dvspec.AnnPodPhase] == "Running", fmt.Sprint(pvc.Annotations)
	})
	cl.podStatus(ctx, t, podKey, finished(contract.Outcome{Message: "Upload Complete", Format: "qcow2"}))
	got := cl.waitPhase(ctx, t, key, cdiv1.Succeeded)
	if c := condition(got, cdiv1.DataVolumeRunning); c == nil || c.Message != "Upload Complete" {
		t.Errorf("Running condition %+v, want Upload Complete", c)
	}
	testenv.Eventually(ctx, t, "the upload pod and secret gone, the claim marked", func() (bool, string) {
		perr := cl.c.Get(ctx, podKey, &corev1.Pod{})
		serr := cl.c.Get(ctx, client.ObjectKeyFromObject(sec), &corev1.Secret{})
		_ = cl.c.Get(ctx, key, pvc)
		cerr := cl.c.Get(ctx, scratchKey, scratch)
		gone := apierrors.IsNotFound(cerr) || cerr == nil && scratch.DeletionTimestamp != nil
		return apierrors.IsNotFound(perr) && apierrors.IsNotFound(serr) && gone && pvc.Annotations[dvspec.AnnPodPhase] == "Succeeded",
			fmt.Sprintf("pod: %v, secret: %v, scratch: %v, claim: %v", perr, serr, cerr, pvc.Annotations)
	})
	wantEvents(t, cl.events, ReasonUploadScheduled, ReasonUploadReady, ReasonUploadSucceeded)
}

// TestImportFails: a fatal outcome fails the DataVolume with the
// importer's words in its conditions, deletes the pod and makes no other;
// a spec that cannot work fails it at once with the field named.
func TestImportFails(t *testing.T) {
	cl := startCluster(t)
	ctx := testenv.Within(t, 60*time.Second)
	ns := cl.namespace(t, "fail")
	dv := httpDV(ns, "corrupt", "https://images.example.com/bad.qcow2")
	dv.UID = ""
	if err := cl.c.Create(ctx, dv); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(dv)
	cl.bind(ctx, t, key)
	podKey := client.ObjectKey{Namespace: ns, Name: "importer-corrupt"}
	out := contract.Outcome{Message: "source https://images.example.com/bad.qcow2: the image is corrupt", Reason: "Corrupt", Fatal: true}
	cl.podStatus(ctx, t, podKey, finished(out))
	got := cl.waitPhase(ctx, t, key, cdiv1.Failed)
	if c := condition(got, cdiv1.DataVolumeRunning); c == nil || c.Reason != "Corrupt" || c.Message != out.Message {
		t.Errorf("Running condition %+v, want the importer's reason and message", c)
	}
	// A pod that ended without filling the claim is not a success to
	// those who read the claim (KubeVirt's virtctl).
	claim := &corev1.PersistentVolumeClaim{}
	if err := cl.c.Get(ctx, key, claim); err != nil || claim.Annotations[dvspec.AnnPodPhase] != "Failed" {
		t.Errorf("claim annotations %v (%v), want the pod's phase Failed", claim.Annotations, err)
	}
	testenv.Eventually(ctx, t, "the importer pod deleted", func() (bool, string) {
		err := cl.c.Get(ctx, podKey, &corev1.Pod{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	quiet, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	testenv.Consistently(quiet, t, 200*time.Millisecond, "no new importer pod", func() (bool, string) {
		err := cl.c.Get(ctx, podKey, &corev1.Pod{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})

	bad := httpDV(ns, "s3", "", func(dv *cdiv1.DataVolume) {
		dv.UID = ""
		dv.Spec.Source = &cdiv1.DataVolumeSource{S3: &cdiv1.DataVolumeSourceS3{URL: "s3://bucket/disk.img"}}
	})
	if err := cl.c.Create(ctx, bad); err != nil {
		t.Fatal(err)
	}
	got = cl.waitPhase(ctx, t, client.ObjectKeyFromObject(bad), cdiv1.Failed)
	if c := condition(got, cdiv1.DataVolumeReady); c == nil || !strings.Contains(c.Message, "spec.source.s3") {
		t.Errorf("Ready condition %+v, want the field named", c)
	}
	if err := cl.c.Get(ctx, client.ObjectKeyFromObject(bad), &corev1.PersistentVolumeClaim{}); !apierrors.IsNotFound(err) {
		t.Errorf("a claim for a DataVolume that cannot work: %v", err)
	}
}

// TestForeignClaim: a claim of the DataVolume's name it does not control
// is left alone and reported, unless the DataVolume may adopt it (KubeVirt's
// dataVolumeTemplates may): then it is taken over as filled. A
// pre-populated DataVolume makes no claim, waits, and takes over the one
// that comes.
func TestForeignClaim(t *testing.T) {
	cl := startCluster(t)
	ctx := testenv.Within(t, 60*time.Second)
	ns := cl.namespace(t, "foreign")
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	if err := cl.c.Create(ctx, pvc); err != nil {
		t.Fatal(err)
	}
	dv := httpDV(ns, "taken", "https://images.example.com/d.raw")
	dv.UID = ""
	if err := cl.c.Create(ctx, dv); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(ctx, t, "ErrResourceExists", func() (bool, string) {
		got := cl.dv(ctx, t, client.ObjectKeyFromObject(dv))
		c := condition(got, cdiv1.DataVolumeBound)
		return c != nil && c.Reason == ReasonResourceExists && strings.Contains(c.Message, `"taken"`), fmt.Sprintf("%+v", got.Status)
	})
	if err := cl.c.Get(ctx, client.ObjectKeyFromObject(pvc), pvc); err != nil || len(pvc.OwnerReferences) != 0 {
		t.Errorf("the foreign claim: %v, owners %+v", err, pvc.OwnerReferences)
	}

	// Allowed to adopt it, a DataVolume takes the claim over as filled.
	kept := pvc.DeepCopy()
	kept.ObjectMeta = metav1.ObjectMeta{Namespace: ns, Name: "kept"}
	if err := cl.c.Create(ctx, kept); err != nil {
		t.Fatal(err)
	}
	cl.bind(ctx, t, client.ObjectKeyFromObject(kept))
	adopter := httpDV(ns, "kept", "https://images.example.com/d.raw")
	adopter.UID = ""
	adopter.Annotations = map[string]string{dvspec.AnnAllowClaimAdoption: "true"}
	if err := cl.c.Create(ctx, adopter); err != nil {
		t.Fatal(err)
	}
	got := cl.waitPhase(ctx, t, client.ObjectKeyFromObject(adopter), cdiv1.Succeeded)
	if err := cl.c.Get(ctx, client.ObjectKeyFromObject(kept), kept); err != nil || !metav1.IsControlledBy(kept, got) ||
		kept.Annotations[dvspec.AnnPopulatedFor] != "kept" {
		t.Errorf("the adopted claim: %v, owners %+v, annotations %v", err, kept.OwnerReferences, kept.Annotations)
	}
	if err := cl.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "importer-kept"}, &corev1.Pod{}); !apierrors.IsNotFound(err) {
		t.Errorf("an importer pod for an adopted claim: %v", err)
	}

	// Pre-populated (CDI's annotation, as a restore sets it), a DataVolume
	// makes no claim and waits for one, which it then takes over as filled.
	later := httpDV(ns, "later", "https://images.example.com/d.raw")
	later.UID = ""
	later.Annotations = map[string]string{dvspec.AnnPrePopulated: "later"}
	if err := cl.c.Create(ctx, later); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(ctx, t, "Pending without a claim", func() (bool, string) {
		got := cl.dv(ctx, t, client.ObjectKeyFromObject(later))
		c := condition(got, cdiv1.DataVolumeBound)
		return got.Status.Phase == cdiv1.Pending && c != nil && c.Reason == ReasonNotFound, fmt.Sprintf("%+v", got.Status)
	})
	if err := cl.c.Get(ctx, client.ObjectKeyFromObject(later), &corev1.PersistentVolumeClaim{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a pre-populated DataVolume made a claim (%v)", err)
	}
	restored := pvc.DeepCopy()
	restored.ObjectMeta = metav1.ObjectMeta{Namespace: ns, Name: "later"}
	if err := cl.c.Create(ctx, restored); err != nil {
		t.Fatal(err)
	}
	cl.bind(ctx, t, client.ObjectKeyFromObject(restored))
	got = cl.waitPhase(ctx, t, client.ObjectKeyFromObject(later), cdiv1.Succeeded)
	if err := cl.c.Get(ctx, client.ObjectKeyFromObject(restored), restored); err != nil || !metav1.IsControlledBy(restored, got) {
		t.Errorf("the pre-populated claim: %v, owners %+v", err, restored.OwnerReferences)
	}
	if err := cl.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "importer-later"}, &corev1.Pod{}); !apierrors.IsNotFound(err) {
		t.Errorf("an importer pod for a pre-populated claim: %v", err)
	}
}

// TestCloneWaitsForItsSource: a clone waits while its source claim is
// missing or used by a running pod, then its importer pod mounts the
// source read-only and copies its disk; the phases are CDI's clone phases.
func TestCloneWaitsForItsSource(t *testing.T) {
	cl := startCluster(t)
	ctx := testenv.Within(t, 60*time.Second)
	ns := cl.namespace(t, "clone")
	dv := httpDV(ns, "copy", "", func(dv *cdiv1.DataVolume) {
		dv.UID = ""
		dv.Spec.Source = &cdiv1.DataVolumeSource{PVC: &cdiv1.DataVolumeSourcePVC{Name: "golden"}}
	})
	if err := cl.c.Create(ctx, dv); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(dv)
	cl.bind(ctx, t, key)
	waitReason := func(reason string) {
		t.Helper()
		testenv.Eventually(ctx, t, "Running condition "+reason, func() (bool, string) {
			got := cl.dv(ctx, t, key)
			c := condition(got, cdiv1.DataVolumeRunning)
			return c != nil && c.Reason == reason && got.Status.Phase == cdiv1.Pending, fmt.Sprintf("%+v", got.Status)
		})
	}
	waitReason(ReasonCloneNoSource)

	cl.sourceClaim(ctx, t, ns, "golden", "")
	user := cl.usedBy(ctx, t, ns, "golden")
	waitReason(ReasonCloneSourceInUse)
	if err := cl.c.Delete(ctx, user, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	cl.waitPhase(ctx, t, key, cdiv1.CloneScheduled)
	pod := cl.podStatus(ctx, t, client.ObjectKey{Namespace: ns, Name: "importer-copy"}, running())
	var source *corev1.Volume
	for i := range pod.Spec.Volumes {
		if v := pod.Spec.Volumes[i]; v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == "golden" {
			source = &pod.Spec.Volumes[i]
		}
	}
	if source == nil || !source.PersistentVolumeClaim.ReadOnly {
		t.Errorf("importer pod volumes %+v: want the source claim read-only", pod.Spec.Volumes)
	}
	cl.waitPhase(ctx, t, key, cdiv1.CloneInProgress)
	cl.podStatus(ctx, t, client.ObjectKey{Namespace: ns, Name: "importer-copy"}, finished(contract.Outcome{Message: "Import Complete"}))
	cl.waitPhase(ctx, t, key, cdiv1.Succeeded)
	pvc := &corev1.PersistentVolumeClaim{}
	if err := cl.c.Get(ctx, key, pvc); err != nil || pvc.Annotations[dvspec.AnnCloneRequest] != ns+"/golden" {
		t.Errorf("clone's claim annotations %v (%v)", pvc.Annotations, err)
	}
}

func condition(dv *cdiv1.DataVolume, t cdiv1.DataVolumeConditionType) *cdiv1.DataVolumeCondition {
	for i := range dv.Status.Conditions {
		if dv.Status.Conditions[i].Type == t {
			return &dv.Status.Conditions[i]
		}
	}
	return nil
}

// wantEvents checks the recorder saw events with these reasons, in order.
func wantEvents(t *testing.T, rec *record.FakeRecorder, reasons ...string) {
	t.Helper()
	var seen []string
	for len(reasons) > 0 {
		select {
		case e := <-rec.Events:
			seen = append(seen, e)
			if strings.Contains(e, " "+reasons[0]+" ") {
				reasons = reasons[1:]
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("events %q: %v missing", seen, reasons)
		}
	}
}

// TestOverheadFromCDIConfig: the CDIConfig's file system overhead, the
// StorageClass's where it names one, sizes the claim and the importer's
// disk, as CDI's; its pod resources and import proxy are the importer
// pod's, and so is its preallocation unless the DataVolume says; an
// importer that preallocated marks the claim so.
func TestOverheadFromCDIConfig(t *testing.T) {
	cl := startCluster(t)
	ctx := testenv.Within(t, 60*time.Second)
	res := cdiconfig.PodResources(&corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")}})
	cl.namespace(t, installNamespace)
	proxyCA := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: installNamespace, Name: "proxy-ca"}, Data: map[string]string{"ca.pem": "PEM"}}
	if err := cl.c.Create(ctx, proxyCA); err != nil {
		t.Fatal(err)
	}
	cfg := &cdiv1.CDIConfig{ObjectMeta: metav1.ObjectMeta{Name: "config"},
		Spec: cdiv1.CDIConfigSpec{InsecureRegistries: []string{"registry.lab:5000"}},
		Status: cdiv1.CDIConfigStatus{FilesystemOverhead: &cdiv1.FilesystemOverhead{Global: "0.1", StorageClass: map[string]cdiv1.Percent{"fast": "0.2"}},
			DefaultPodResourceRequirements: res,
			ImportProxy: &cdiv1.ImportProxy{HTTPSProxy: ptr.To("http://proxy.example.com:3128"), NoProxy: ptr.To(".cluster.local"),
				TrustedCAProxy: ptr.To(proxyCA.Name)},
			Preallocation: true}}
	if err := cl.c.Create(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	ns := cl.namespace(t, "overhead")
	fast := "fast"
	for _, tc := range []struct {
		name          string
		class         *string
		overhead      float64
		preallocation *bool
	}{{"global", nil, 0.1, nil}, {"class", &fast, 0.2, ptr.To(false)}} {
		dv := httpDV(ns, tc.name, "https://images.example.com/disk.raw", func(dv *cdiv1.DataVolume) {
			dv.UID = ""
			dv.Spec.Storage.StorageClassName = tc.class
			dv.Spec.Preallocation = tc.preallocation
		})
		if err := cl.c.Create(ctx, dv); err != nil {
			t.Fatal(err)
		}
		pvc := cl.bind(ctx, t, client.ObjectKeyFromObject(dv))
		want := contract.RequiredSpace(64<<20, tc.overhead)
		if got := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; got.Value() != want {
			t.Errorf("%s: claim size %d, want %d (64 MiB and %v)", tc.name, got.Value(), want, tc.overhead)
		}
		pod := cl.podStatus(ctx, t, client.ObjectKey{Namespace: ns, Name: "importer-" + tc.name}, running())
		args, err := contract.Parse(pod.Spec.Containers[0].Command[1:], nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := contract.UsableSpace(want, tc.overhead); args.Size != want {
			t.Errorf("%s: importer disk size %d, want %d", tc.name, args.Size, want)
		}
		if want := tc.preallocation == nil; args.Preallocate != want {
			t.Errorf("%s: importer preallocates %v, want %v", tc.name, args.Preallocate, want)
		}
		c := pod.Spec.Containers[0]
		if d := cmp.Diff(*res, c.Resources); d != "" {
			t.Errorf("%s: importer resources (-want +got):\n%s", tc.name, d)
		}
		if d := cmp.Diff([]corev1.EnvVar{{Name: "HTTPS_PROXY", Value: "http://proxy.example.com:3128"}, {Name: "NO_PROXY", Value: ".cluster.local"}}, c.Env); d != "" {
			t.Errorf("%s: importer environment (-want +got):\n%s", tc.name, d)
		}
		// The proxy's CAs, copied into the claim's namespace and mounted.
		copied := &corev1.ConfigMap{}
		if err := cl.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: ProxyCAConfigMapName(pvc.Name)}, copied); err != nil || copied.Data["ca.pem"] != "PEM" {
			t.Errorf("%s: the copy of the proxy's CAs: %v, %v", tc.name, copied.Data, err)
		}
		if args.ProxyCertDir != contract.ProxyCertsDir || !slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool {
			return v.ConfigMap != nil && v.ConfigMap.Name == ProxyCAConfigMapName(pvc.Name)
		}) {
			t.Errorf("%s: importer does not mount the proxy's CAs: args %+v, volumes %+v", tc.name, args, pod.Spec.Volumes)
		}
	}
	// A registry the CDIConfig lists as insecure.
	for name, insecure := range map[string]bool{"registry.lab:5000": true, "quay.io": false} {
		dv := httpDV(ns, "from-"+strings.NewReplacer(".", "-", ":", "-").Replace(name), "", func(dv *cdiv1.DataVolume) {
			dv.UID = ""
			dv.Spec.Source = &cdiv1.DataVolumeSource{Registry: &cdiv1.DataVolumeSourceRegistry{URL: ptr.To("docker://" + name + "/guest:v1")}}
		})
		if err := cl.c.Create(ctx, dv); err != nil {
			t.Fatal(err)
		}
		cl.bind(ctx, t, client.ObjectKeyFromObject(dv))
		pod := cl.podStatus(ctx, t, client.ObjectKey{Namespace: ns, Name: "importer-" + dv.Name}, running())
		args, err := contract.Parse(pod.Spec.Containers[0].Command[1:], nil)
		if err != nil {
			t.Fatal(err)
		}
		if args.Source != contract.SourceRegistry || args.InsecureRegistry != insecure {
			t.Errorf("importer of %s: source %s, insecure %v; want registry, %v", name, args.Source, args.InsecureRegistry, insecure)
		}
	}
	key := client.ObjectKey{Namespace: ns, Name: "global"}
	cl.podStatus(ctx, t, client.ObjectKey{Namespace: ns, Name: "importer-global"}, finished(contract.Outcome{Message: "Import Complete", PreallocationApplied: true}))
	cl.waitPhase(ctx, t, key, cdiv1.Succeeded)
	if pvc := cl.waitClaim(ctx, t, key); pvc.Annotations[dvspec.AnnPreallocationApplied] != "true" {
		t.Errorf("claim annotations %v, want %s true", pvc.Annotations, dvspec.AnnPreallocationApplied)
	}
	// The copy of the proxy's CAs goes with the pod.
	testenv.EventuallyEvery(ctx, t, 100*time.Millisecond, "the copy of the proxy's CAs deleted", func() (bool, string) {
		err := cl.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: ProxyCAConfigMapName("global")}, &corev1.ConfigMap{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

// TestCloneFromAnotherNamespace: a clone of a claim of another namespace
// gets an upload pod, whose Secret trusts a client certificate made for
// the clone, and the finalizer; once that pod is ready, a source pod in the
// source's namespace mounts the claim read-only and sends its disk there
// with that certificate, pinning the upload pod's. When the upload pod
// ends well the DataVolume Succeeds and nothing is left in either
// namespace. One deleted while it runs leaves nothing in the source's
// namespace either; one whose source pod is refused fails with its words,
// and leaves nothing.
func TestCloneFromAnotherNamespace(t *testing.T) {
	cl := startCluster(t)
	ctx := testenv.Within(t, 60*time.Second)
	golden, ns := cl.namespace(t, "golden"), cl.namespace(t, "copies")
	base := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: golden, Name: "base"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")}}}}
	if err := cl.c.Create(ctx, base); err != nil {
		t.Fatal(err)
	}
	cl.bind(ctx, t, client.ObjectKeyFromObject(base))
	clone := func(name string) (*cdiv1.DataVolume, *corev1.Pod, *corev1.Pod) {
		t.Helper()
		dv := httpDV(ns, name, "", func(dv *cdiv1.DataVolume) {
			dv.UID = ""
			dv.Spec.Source = &cdiv1.DataVolumeSource{PVC: &cdiv1.DataVolumeSourcePVC{Namespace: golden, Name: "base"}}
		})
		if err := cl.c.Create(ctx, dv); err != nil {
			t.Fatal(err)
		}
		key := client.ObjectKeyFromObject(dv)
		cl.bind(ctx, t, key)
		ready := readyPod()
		target := cl.podStatus(ctx, t, client.ObjectKey{Namespace: ns, Name: "cdi-upload-" + name}, ready)
		dv = cl.dv(ctx, t, key)
		if !controllerutil.ContainsFinalizer(dv, CloneFinalizer) || dv.Annotations[AnnCloneSourceNamespace] != golden {
			t.Errorf("DataVolume finalizers %v annotations %v: want the clone finalizer and the source namespace", dv.Finalizers, dv.Annotations)
		}
		up := &corev1.Secret{}
		if err := cl.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cdi-upload-" + name + "-tls"}, up); err != nil {
			t.Fatal(err)
		}
		source := cl.podStatus(ctx, t, client.ObjectKey{Namespace: golden, Name: string(dv.UID) + "-source-pod"}, running())
		args, err := contract.Parse(source.Spec.Containers[0].Command[1:], nil)
		if err != nil {
			t.Fatal(err)
		}
		if args.Source != contract.SourceSend || args.URL != "https://10.0.0.9:8444" || args.Path != "/source/disk.img" {
			t.Errorf("source pod args %+v, want to send /source/disk.img to the upload pod", args)
		}
		ro := false
		for _, v := range source.Spec.Volumes {
			ro = ro || (v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == "base" && v.PersistentVolumeClaim.ReadOnly)
		}
		sec := &corev1.Secret{}
		if err := cl.c.Get(ctx, client.ObjectKey{Namespace: golden, Name: string(dv.UID) + "-source-pod-tls"}, sec); err != nil {
			t.Fatal(err)
		}
		if !ro || string(sec.Data[contract.CloneServerCertKey]) != string(up.Data[corev1.TLSCertKey]) ||
			string(sec.Data[corev1.TLSCertKey]) != string(up.Data[CloneClientCertKey]) ||
			!strings.Contains(string(up.Data[corev1.ServiceAccountRootCAKey]), string(up.Data[CloneClientCertKey])) {
			t.Errorf("source pod volumes %+v, secrets: want the claim read-only, the upload pod's certificate pinned and the clone's trusted", source.Spec.Volumes)
		}
		return dv, target, source
	}
	gone := func(dv *cdiv1.DataVolume) {
		t.Helper()
		testenv.Eventually(ctx, t, "nothing left of the clone "+dv.Name, func() (bool, string) {
			var left []string
			for _, k := range []client.ObjectKey{{Namespace: golden, Name: string(dv.UID) + "-source-pod"}, {Namespace: ns, Name: "cdi-upload-" + dv.Name}} {
				if err := cl.c.Get(ctx, k, &corev1.Pod{}); !apierrors.IsNotFound(err) {
					left = append(left, "pod "+k.String())
				}
				k.Name += "-tls"
				if err := cl.c.Get(ctx, k, &corev1.Secret{}); !apierrors.IsNotFound(err) {
					left = append(left, "secret "+k.String())
				}
			}
			got := cl.dv(ctx, t, client.ObjectKeyFromObject(dv))
			if controllerutil.ContainsFinalizer(got, CloneFinalizer) {
				left = append(left, "the finalizer")
			}
			return len(left) == 0, strings.Join(left, ", ")
		})
	}

	dv, target, _ := clone("copy")
	cl.waitPhase(ctx, t, client.ObjectKeyFromObject(dv), cdiv1.CloneInProgress)
	cl.podStatus(ctx, t, client.ObjectKeyFromObject(target), finished(contract.Outcome{Message: "Upload Complete"}))
	got := cl.waitPhase(ctx, t, client.ObjectKeyFromObject(dv), cdiv1.Succeeded)
	if c := condition(got, cdiv1.DataVolumeRunning); c == nil || c.Message != "Clone Complete" {
		t.Errorf("Running condition %+v, want Clone Complete", c)
	}
	gone(dv)

	// Deleted while its source pod runs: the finalizer holds it until the
	// source pod and Secret in golden are gone.
	dv, _, _ = clone("dropped")
	if err := cl.c.Delete(ctx, dv); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(ctx, t, "the dropped clone gone, and its source", func() (bool, string) {
		derr := cl.c.Get(ctx, client.ObjectKeyFromObject(dv), &cdiv1.DataVolume{})
		perr := cl.c.Get(ctx, client.ObjectKey{Namespace: golden, Name: string(dv.UID) + "-source-pod"}, &corev1.Pod{})
		serr := cl.c.Get(ctx, client.ObjectKey{Namespace: golden, Name: string(dv.UID) + "-source-pod-tls"}, &corev1.Secret{})
		return apierrors.IsNotFound(derr) && apierrors.IsNotFound(perr) && apierrors.IsNotFound(serr),
			fmt.Sprintf("DataVolume: %v, source pod: %v, secret: %v", derr, perr, serr)
	})

	dv, _, source := clone("refused")
	refusal := contract.Outcome{Message: "the clone's target refused claim golden/base: corrupt image", Reason: "CloneFailed", Fatal: true}
	cl.podStatus(ctx, t, client.ObjectKeyFromObject(source), finished(refusal))
	got = cl.waitPhase(ctx, t, client.ObjectKeyFromObject(dv), cdiv1.Failed)
	if c := condition(got, cdiv1.DataVolumeRunning); c == nil || c.Reason != "CloneFailed" || c.Message != refusal.Message {
		t.Errorf("Running condition %+v, want the source pod's words", c)
	}
	gone(dv)
}

// TestBareClaimUpload: a claim marked for upload that no DataVolume
// controls gets an upload pod it controls once bound; the claim mirrors
// the pod's readiness and, once the upload is stored, its success, and
// the pod and its Secret go.
func TestBareClaimUpload(t *testing.T) {
	cl := startCluster(t)
	ctx := testenv.Within(t, 60*time.Second)
	ns := cl.namespace(t, "bare")
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "disk",
		Annotations: map[string]string{dvspec.AnnUploadRequest: "", dvspec.AnnContentType: "kubevirt"}},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")}}}}
	if err := cl.c.Create(ctx, pvc); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(pvc)
	pvc = cl.bind(ctx, t, key)
	ready := readyPod()
	podKey := client.ObjectKey{Namespace: ns, Name: "cdi-upload-disk"}
	pod := cl.podStatus(ctx, t, podKey, ready)
	if !metav1.IsControlledBy(pod, pvc) {
		t.Errorf("upload pod owners %+v, want the claim", pod.OwnerReferences)
	}
	args, err := contract.Parse(pod.Spec.Containers[0].Command[1:], nil)
	if err != nil {
		t.Fatal(err)
	}
	if args.Source != contract.SourceUpload || args.Size != contract.UsableSpace(64<<20, contract.DefaultFilesystemOverhead) {
		t.Errorf("upload pod args %+v, want an upload into the claim's usable space", args)
	}
	annotated := func(what, k, v string) {
		t.Helper()
		testenv.Eventually(ctx, t, what, func() (bool, string) {
			_ = cl.c.Get(ctx, key, pvc)
			return pvc.Annotations[k] == v, fmt.Sprint(pvc.Annotations)
		})
	}
	annotated("the claim saying the pod is ready", dvspec.AnnPodReady, "true")
	cl.podStatus(ctx, t, podKey, finished(contract.Outcome{Message: "Upload Complete"}))
	annotated("the claim saying the upload succeeded", dvspec.AnnPodPhase, "Succeeded")
	testenv.Eventually(ctx, t, "the upload pod and secret gone", func() (bool, string) {
		perr := cl.c.Get(ctx, podKey, &corev1.Pod{})
		serr := cl.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cdi-upload-disk-tls"}, &corev1.Secret{})
		return apierrors.IsNotFound(perr) && apierrors.IsNotFound(serr), fmt.Sprintf("pod: %v, secret: %v", perr, serr)
	})
}

// TestClaimDefaultsFromStorageProfile: spec.storage's claim takes the
// access and volume modes it does not name from the StorageProfile of the
// cluster's default StorageClass.
func TestClaimDefaultsFromStorageProfile(t *testing.T) {
	cl := startCluster(t)
	ctx := testenv.Within(t, 60*time.Second)
	if err := cl.c.Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "shared",
		Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}}, Provisioner: "example.com/shared"}); err != nil {
		t.Fatal(err)
	}
	block := corev1.PersistentVolumeBlock
	sp := &cdiv1.StorageProfile{ObjectMeta: metav1.ObjectMeta{Name: "shared"}}
	if err := cl.c.Create(ctx, sp); err != nil {
		t.Fatal(err)
	}
	sp.Status.ClaimPropertySets = []cdiv1.ClaimPropertySet{{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}, VolumeMode: &block}}
	if err := cl.c.Status().Update(ctx, sp); err != nil {
		t.Fatal(err)
	}
	ns := cl.namespace(t, "profile")
	dv := httpDV(ns, "disk", "https://images.example.com/disk.raw", func(dv *cdiv1.DataVolume) { dv.UID = "" })
	if err := cl.c.Create(ctx, dv); err != nil {
		t.Fatal(err)
	}
	pvc := &corev1.PersistentVolumeClaim{}
	testenv.Eventually(ctx, t, "the claim", func() (bool, string) {
		err := cl.c.Get(ctx, client.ObjectKeyFromObject(dv), pvc)
		return err == nil, fmt.Sprint(err)
	})
	if pvc.Spec.VolumeMode == nil || *pvc.Spec.VolumeMode != block || len(pvc.Spec.AccessModes) != 1 || pvc.Spec.AccessModes[0] != corev1.ReadWriteMany {
		t.Errorf("claim modes %v %v, want the profile's ReadWriteMany Block", pvc.Spec.VolumeMode, pvc.Spec.AccessModes)
	}
	if got := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; got.Value() != 64<<20 {
		t.Errorf("block claim size %s, want 64Mi (no file system overhead)", got.String())
	}
}

// TestWaitForFirstConsumer: the claim of a class that binds on first
// consumer stays Pending until a pod uses it. As CDI's under
// HonorWaitForFirstConsumer (virtkit's default), the DataVolume then waits
// in phase WaitForFirstConsumer with no importer pod, and imports once a
// workload's pod has bound the claim; a bare claim for upload waits too.
// A DataVolume asking for immediate binding, or any once the CDIConfig
// drops the gate, gets its importer pod at once, to be that consumer.
func TestWaitForFirstConsumer(t *testing.T) {
	cl := startCluster(t)
	ctx := testenv.Within(t, 60*time.Second)
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	if err := cl.c.Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "late"}, Provisioner: "example.com/late",
		VolumeBindingMode: &wffc}); err != nil {
		t.Fatal(err)
	}
	ns := cl.namespace(t, "late")
	late := "late"
	inLate := func(name string, ann map[string]string) *cdiv1.DataVolume {
		t.Helper()
		dv := httpDV(ns, name, "https://images.example.com/disk.raw", func(dv *cdiv1.DataVolume) {
			dv.UID = ""
			dv.Annotations = ann
			dv.Spec.Storage.StorageClassName = &late
		})
		if err := cl.c.Create(ctx, dv); err != nil {
			t.Fatal(err)
		}
		return dv
	}
	importer := func(name string) {
		t.Helper()
		testenv.Eventually(ctx, t, "the importer pod of "+name+", its claim Pending", func() (bool, string) {
			err := cl.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "importer-" + name}, &corev1.Pod{})
			return err == nil, fmt.Sprint(err)
		})
		pvc := &corev1.PersistentVolumeClaim{}
		if err := cl.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pvc); err != nil || pvc.Status.Phase == corev1.ClaimBound {
			t.Errorf("claim %s: %v %s, want it still Pending", name, err, pvc.Status.Phase)
		}
		cl.waitPhase(ctx, t, client.ObjectKey{Namespace: ns, Name: name}, cdiv1.ImportScheduled)
	}

	dv := inLate("disk", nil)
	key := client.ObjectKeyFromObject(dv)
	got := cl.waitPhase(ctx, t, key, cdiv1.WaitForFirstConsumer)
	if c := condition(got, cdiv1.DataVolumeBound); c == nil || c.Status != corev1.ConditionFalse || c.Reason != ReasonPending {
		t.Errorf("Bound condition %+v, want False %s", c, ReasonPending)
	}
	upload := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "upload",
		Annotations: map[string]string{dvspec.AnnUploadRequest: "", dvspec.AnnContentType: "kubevirt"}},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: &late,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")}}}}
	if err := cl.c.Create(ctx, upload); err != nil {
		t.Fatal(err)
	}
	// Forced to bind at once, beside the waiting one: once its pod is
	// made, the waiting DataVolume and claim have been seen since.
	inLate("forced", map[string]string{dvspec.AnnImmediateBinding: ""})
	importer("forced")
	for _, pod := range []string{"importer-disk", "cdi-upload-upload"} {
		if err := cl.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: pod}, &corev1.Pod{}); !apierrors.IsNotFound(err) {
			t.Errorf("pod %s: %v, want none while its claim waits for its first consumer", pod, err)
		}
	}
	if got := cl.dv(ctx, t, key); got.Status.Phase != cdiv1.WaitForFirstConsumer {
		t.Errorf("phase %s, want %s", got.Status.Phase, cdiv1.WaitForFirstConsumer)
	}

	// A workload's pod binds the claim: the import starts.
	cl.bind(ctx, t, key)
	cl.waitPhase(ctx, t, key, cdiv1.ImportScheduled)
	testenv.Eventually(ctx, t, "the importer pod of the bound claim", func() (bool, string) {
		err := cl.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "importer-disk"}, &corev1.Pod{})
		return err == nil, fmt.Sprint(err)
	})

	// Without the gate, the importer pod is the first consumer.
	if err := cl.c.Create(ctx, &cdiv1.CDIConfig{ObjectMeta: metav1.ObjectMeta{Name: "config"},
		Spec: cdiv1.CDIConfigSpec{FeatureGates: []string{"Other"}}}); err != nil {
		t.Fatal(err)
	}
	inLate("ungated", nil)
	importer("ungated")
}

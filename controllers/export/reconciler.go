package export

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	virtv1 "kubevirt.io/api/core/v1"
	exportv1 "kubevirt.io/api/export/v1beta1"
	vmsnapshotv1 "kubevirt.io/api/snapshot/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/virtkit/virtkit/controllers/conditions"
	"github.com/virtkit/virtkit/controllers/events"
	"github.com/virtkit/virtkit/deploy/certs"
	"github.com/virtkit/virtkit/virt/storage/export"
	exporttoken "github.com/virtkit/virtkit/virt/storage/export/token"
)

// KubeVirt's event reasons of an export.
const (
	EventServiceCreated       = "ServiceCreated"
	EventSecretCreated        = "SecretCreated"
	EventPodCreated           = "ExporterPodCreated"
	EventPodFailedOrCompleted = "ExporterPodFailedOrCompleted"
	EventExportPaused         = "ExportPaused"
	EventClaimCreated         = "PersistentVolumeClaimCreated"
	EventManifestsCreated     = "DataManifestCreated"
)

// Defaults of KubeVirt's export controller.
const (
	DefaultCertDuration = 24 * time.Hour
	DefaultInUseRecheck = 3 * time.Second
)

// Reconciler reconciles VirtualMachineExports.
type Reconciler struct {
	client client.Client
	// apiReader reads Secrets and ConfigMaps uncached: the controller may
	// get them, not list or watch them.
	apiReader    client.Reader
	clock        clock.PassiveClock
	recorder     events.Recorder
	signer       Signer
	image        string
	pullPolicy   corev1.PullPolicy
	externalHost string
	externalCert string
	// ingressNamespace is where Ingresses to the export proxy are looked
	// for when no external host is given ("" not at all); ext remembers
	// the last one read.
	ingressNamespace string
	ext              external
	// fixedParams are the servers' certificate parameters, unless
	// kubevirtParams: the KubeVirt CR's of kubevirtNamespace.
	fixedParams       CertParams
	kubevirtParams    bool
	kubevirtNamespace string
	recheck           time.Duration
	// known remembers what the current server pod of each export was
	// made with, so that a steady export costs no API reads.
	known *knownServers
	// specSource gives the settings an exported VM's instancetype is
	// expanded with; nil: virt/spec's defaults.
	specSource SpecOptionsSource
}

// New returns a Reconciler signing server certificates with signer.
func New(signer Signer, opts ...Option) *Reconciler {
	r := &Reconciler{signer: signer, clock: clock.RealClock{}, recorder: events.Discard(),
		fixedParams: CertParamsFor(DefaultCertDuration), recheck: DefaultInUseRecheck, known: newKnownServers()}
	for _, o := range opts {
		o(r)
	}
	return r
}

// SetupWithManager registers the reconciler: exports, what they own, and
// the claims, VMs, VMIs and DataVolumes of their namespace.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.image == "" || r.signer == nil {
		return errors.New("export controller: an image (WithImage) and a Signer are required")
	}
	if r.client == nil {
		r.client = mgr.GetClient()
	}
	if r.apiReader == nil {
		r.apiReader = mgr.GetAPIReader()
	}
	r.recorder = events.OrManager(r.recorder, mgr, "virt-controller")
	inNamespace := handler.EnqueueRequestsFromMapFunc(r.exportsOf)
	b := ctrl.NewControllerManagedBy(mgr)
	if r.externalHost == "" && r.ingressNamespace != "" {
		b = b.Watches(&networkingv1.Ingress{}, handler.EnqueueRequestsFromMapFunc(r.allExports))
	}
	if r.kubevirtParams {
		b = b.Watches(&virtv1.KubeVirt{}, handler.EnqueueRequestsFromMapFunc(r.kubevirtExports))
	}
	return b.
		Named("virtualmachineexport").
		For(&exportv1.VirtualMachineExport{}).
		// Its own server pods, and any pod that may hold a claim.
		Watches(&corev1.Pod{}, inNamespace, builder.WithPredicates(predicate.NewPredicateFuncs(holdsClaim))).
		Owns(&corev1.Service{}).
		Watches(&corev1.PersistentVolumeClaim{}, inNamespace).
		Watches(&virtv1.VirtualMachine{}, inNamespace).
		Watches(&virtv1.VirtualMachineInstance{}, inNamespace).
		Watches(&vmsnapshotv1.VirtualMachineSnapshot{}, inNamespace).
		Complete(r)
}

// holdsClaim reports whether obj is a pod with a claim volume.
func holdsClaim(obj client.Object) bool {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return false
	}
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			return true
		}
	}
	return false
}

// exportsOf enqueues the exports of obj's namespace: few, and any may
// name obj as its source or a claim of its VM.
func (r *Reconciler) exportsOf(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &exportv1.VirtualMachineExportList{}
	if err := r.client.List(ctx, list, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, e := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&e)})
	}
	return reqs
}

// ttl is vme's time to live.
func ttl(vme *exportv1.VirtualMachineExport) time.Duration {
	if vme.Spec.TTLDuration != nil {
		return vme.Spec.TTLDuration.Duration
	}
	return exportv1.DefaultDurationTTL
}

// tokenSecret is the Secret of vme's token: the one its spec names, or
// the controller's own.
func tokenSecret(vme *exportv1.VirtualMachineExport) (name string, ours bool) {
	if n := ptr.Deref(vme.Spec.TokenSecretRef, ""); n != "" {
		return n, false
	}
	return export.TokenSecretName(vme.Name), true
}

// Reconcile implements reconcile.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	vme := &exportv1.VirtualMachineExport{}
	if err := r.client.Get(ctx, req.NamespacedName, vme); err != nil {
		if apierrors.IsNotFound(err) {
			r.known.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if vme.DeletionTimestamp != nil {
		r.known.forget(req.NamespacedName)
		return ctrl.Result{}, nil // what it made is owned by it
	}
	now := r.clock.Now()
	expiry := vme.CreationTimestamp.Add(ttl(vme))
	if !now.Before(expiry) {
		logf.FromContext(ctx).Info("the export's TTL has passed: deleting it", "expired", expiry)
		return ctrl.Result{}, client.IgnoreNotFound(r.client.Delete(ctx, vme, client.Preconditions{UID: &vme.UID}))
	}
	next := vme.DeepCopy()
	st := next.Status
	if st == nil {
		st = &exportv1.VirtualMachineExportStatus{Phase: exportv1.Pending}
		conditions.Export().Set(&st.Conditions, *cond(exportv1.ConditionReady, false, ReasonInitializing, ""), metav1.NewTime(now))
		next.Status = st
	}
	tokenName, ownToken := tokenSecret(vme)
	st.TokenSecretRef = ptr.To(tokenName)
	st.TTLExpirationTime = ptr.To(metav1.NewTime(expiry))
	st.ServiceName = export.ServiceName(vme.Name)
	st.Links = &exportv1.VirtualMachineExportLinks{}

	if err := r.ensureService(ctx, vme); err != nil {
		return ctrl.Result{}, err
	}
	src, err := r.sourceOf(ctx, vme)
	if err != nil {
		return ctrl.Result{}, err
	}
	st.VirtualMachineName = src.vm
	for _, c := range []*exportv1.Condition{src.claimCond, src.volumesCond} {
		if c != nil {
			conditions.Export().Set(&st.Conditions, *c, metav1.NewTime(now))
		}
	}
	pod, err := r.pod(ctx, vme)
	if err != nil {
		return ctrl.Result{}, err
	}
	res := ctrl.Result{RequeueAfter: expiry.Sub(now)}
	switch {
	case src.skip || src.wait:
		if pod != nil && pod.DeletionTimestamp == nil {
			if err := r.deletePod(ctx, vme, pod, EventExportPaused, "the export waits: "+src.message); err != nil {
				return ctrl.Result{}, err
			}
		}
		st.Phase = exportv1.Pending
		if src.skip {
			st.Phase = exportv1.Skipped
		}
		conditions.Export().Set(&st.Conditions, *cond(exportv1.ConditionReady, false, src.reason, src.message), metav1.NewTime(now))
		if src.inUse {
			res.RequeueAfter = min(res.RequeueAfter, r.recheck)
		}
	default:
		// The token is made before the first server pod; a server that
		// runs has it.
		if ownToken && pod == nil {
			if err := r.ensureToken(ctx, vme, tokenName); err != nil {
				return ctrl.Result{}, err
			}
		}
		params, err := r.certParams(ctx)
		if err != nil {
			return ctrl.Result{}, err
		}
		// A server pod that goes is replaced once it is gone: its
		// deletion brings the export back (a successor made before then
		// would fail on the name).
		replacing := pod != nil && pod.DeletionTimestamp != nil
		switch {
		case pod == nil || replacing:
		case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
			// Its deadline (a certificate to renew) or a failure: a
			// new pod, with a new certificate, comes next.
			err, replacing = r.deletePod(ctx, vme, pod, EventPodFailedOrCompleted, fmt.Sprintf("the export server pod %s ended (%s)", pod.Name, pod.Status.Phase)), true
		case pod.Annotations[AnnCertParams] != params.annotation():
			err, replacing = r.deletePod(ctx, vme, pod, EventCertParamsChanged, "Exporter TLS certificate parameters updated"), true
		}
		if err != nil {
			return ctrl.Result{}, err
		}
		if replacing {
			st.Phase = exportv1.Pending
			conditions.Export().Set(&st.Conditions, *cond(exportv1.ConditionReady, false, ReasonPodPending,
				fmt.Sprintf("the export server pod %s is being replaced", pod.Name)), metav1.NewTime(now))
			break
		}
		ca, err := r.serverCert(ctx, vme, now, pod, params)
		if err != nil {
			return ctrl.Result{}, err
		}
		host, hostCert, err := r.externalLink(ctx, now)
		if err != nil {
			return ctrl.Result{}, err
		}
		manifests := ""
		if src.vmObj != nil {
			if manifests, err = r.ensureManifests(ctx, vme, src, ca.bundle, host, hostCert); err != nil {
				return ctrl.Result{}, err
			}
		}
		if pod == nil {
			if pod, err = r.createPod(ctx, vme, src.vols, ca.deadline(expiry, params), params, manifests); err != nil {
				return ctrl.Result{}, err
			}
			r.known.servedBy(vme.UID, req.NamespacedName, pod.UID, ca)
		}
		r.podStatus(st, vme, pod, src.vols, ca.bundle, host, hostCert, now)
	}
	if !equality.Semantic.DeepEqual(vme.Status, next.Status) {
		if err := r.client.Status().Update(ctx, next); err != nil {
			if apierrors.IsConflict(err) {
				return ctrl.Result{}, nil // the export changed: its event brings it back
			}
			return ctrl.Result{}, fmt.Errorf("export %s/%s: status: %w", vme.Namespace, vme.Name, err)
		}
	}
	return res, nil
}

// podStatus sets the phase, Ready and links from the server pod.
func (r *Reconciler) podStatus(st *exportv1.VirtualMachineExportStatus, vme *exportv1.VirtualMachineExport, pod *corev1.Pod, vols []export.Volume, ca, host, hostCert string, now time.Time) {
	t := metav1.NewTime(now)
	switch {
	case pod.Status.Phase == corev1.PodRunning && conditions.Pod().IsTrue(pod.Status.Conditions, corev1.PodReady):
		st.Phase = exportv1.Ready
		conditions.Export().Set(&st.Conditions, *cond(exportv1.ConditionReady, true, ReasonPodReady, ""), t)
		vmManifests := st.VirtualMachineName != nil
		st.Links.Internal = export.Links(export.InternalBase(vme.Namespace, vme.Name), ca, export.Internal, vols, vmManifests)
		if host != "" {
			st.Links.External = export.Links(export.ExternalBase(host, vme.Namespace, vme.Name), hostCert, export.External, vols, vmManifests)
		}
	case pod.Status.Phase == corev1.PodPending || pod.Status.Phase == corev1.PodRunning:
		st.Phase = exportv1.Pending
		conditions.Export().Set(&st.Conditions, *cond(exportv1.ConditionReady, false, ReasonPodPending, fmt.Sprintf("the export server pod %s is not ready yet", pod.Name)), t)
	default:
		st.Phase = exportv1.Pending
		conditions.Export().Set(&st.Conditions, *cond(exportv1.ConditionReady, false, ReasonUnknown, ""), t)
	}
}

// pod returns vme's server pod (also one being deleted), nil when there
// is none. A pod of its name that vme does not control is an error.
func (r *Reconciler) pod(ctx context.Context, vme *exportv1.VirtualMachineExport) (*corev1.Pod, error) {
	pod := &corev1.Pod{}
	key := client.ObjectKey{Namespace: vme.Namespace, Name: export.PodName(vme.Name)}
	switch err := r.client.Get(ctx, key, pod); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading pod %s: %w", key, err)
	}
	if !metav1.IsControlledBy(pod, vme) {
		return nil, fmt.Errorf("pod %s exists and is not export %s's", key, vme.Name)
	}
	return pod, nil
}

func (r *Reconciler) deletePod(ctx context.Context, vme *exportv1.VirtualMachineExport, pod *corev1.Pod, reason, msg string) error {
	if err := r.client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	r.recorder.Eventf(vme, corev1.EventTypeWarning, reason, "Deleted export server pod %s: %s", pod.Name, msg)
	return nil
}

func (r *Reconciler) createPod(ctx context.Context, vme *exportv1.VirtualMachineExport, vols []export.Volume, deadline time.Time, params CertParams, manifests string) (*corev1.Pod, error) {
	tokenName, _ := tokenSecret(vme)
	pod, err := ServerPod(vme, vols, PodParams{Image: r.image, PullPolicy: r.pullPolicy, CertSecret: export.CertSecretName(vme.Name),
		TokenSecret: tokenName, Deadline: deadline, Manifests: manifests})
	if err != nil {
		return nil, err
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[AnnCertParams] = params.annotation()
	if err := r.client.Create(ctx, pod); err != nil {
		return nil, fmt.Errorf("creating pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	r.recorder.Eventf(vme, corev1.EventTypeNormal, EventPodCreated, "Created export server pod %s", pod.Name)
	return pod, nil
}

func (r *Reconciler) ensureService(ctx context.Context, vme *exportv1.VirtualMachineExport) error {
	svc := Service(vme)
	// The cache holds the exports' Services (they are watched): a
	// Service there is not made again.
	switch err := r.client.Get(ctx, client.ObjectKeyFromObject(svc), &corev1.Service{}); {
	case err == nil:
		return nil
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("reading Service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	err := r.client.Create(ctx, svc)
	switch {
	case apierrors.IsAlreadyExists(err):
		return nil
	case err != nil:
		return fmt.Errorf("creating Service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	r.recorder.Eventf(vme, corev1.EventTypeNormal, EventServiceCreated, "Created Service %s", svc.Name)
	return nil
}

// ensureToken creates the controller's token Secret of vme, once.
func (r *Reconciler) ensureToken(ctx context.Context, vme *exportv1.VirtualMachineExport, name string) error {
	token, err := exporttoken.New()
	if err != nil {
		return err
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: vme.Namespace, OwnerReferences: []metav1.OwnerReference{owner(vme)}},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{exporttoken.Key: []byte(token)},
	}
	switch err := r.client.Create(ctx, s); {
	case apierrors.IsAlreadyExists(err):
		return nil
	case err != nil:
		return fmt.Errorf("creating token Secret %s/%s: %w", vme.Namespace, name, err)
	}
	r.recorder.Eventf(vme, corev1.EventTypeNormal, EventSecretCreated, "Created token Secret %s", name)
	return nil
}

// served is the certificate a server pod is made with.
type served struct {
	notAfter time.Time
	bundle   string
}

// deadline is when a server with this certificate stops: the export's
// expiry, or p.RenewBefore before the certificate's end.
func (s served) deadline(expiry time.Time, p CertParams) time.Time {
	renew := s.notAfter.Add(-p.RenewBefore)
	if expiry.Before(renew) {
		return expiry
	}
	return renew
}

// serverCert returns the certificate of vme's server pod, the one a new
// pod is to be made with when pod is nil. That of a running pod is
// remembered, and read from its Secret only after a restart.
func (r *Reconciler) serverCert(ctx context.Context, vme *exportv1.VirtualMachineExport, now time.Time, pod *corev1.Pod, params CertParams) (served, error) {
	if pod != nil {
		if s, ok := r.known.cert(vme.UID, pod.UID); ok {
			return s, nil
		}
	}
	s, err := r.ensureCert(ctx, vme, now, pod == nil, params)
	if err == nil && pod != nil {
		r.known.servedBy(vme.UID, client.ObjectKeyFromObject(vme), pod.UID, s)
	}
	return s, err
}

// ensureCert returns the certificate of vme's server, issuing a new one
// of params when there is none, it does not fit, or (renew: a new pod is
// to be made) it is due for renewal or was issued with other parameters.
func (r *Reconciler) ensureCert(ctx context.Context, vme *exportv1.VirtualMachineExport, now time.Time, renew bool, params CertParams) (served, error) {
	key := client.ObjectKey{Namespace: vme.Namespace, Name: export.CertSecretName(vme.Name)}
	s := &corev1.Secret{}
	err := r.apiReader.Get(ctx, key, s)
	if err != nil && !apierrors.IsNotFound(err) {
		return served{}, fmt.Errorf("reading Secret %s: %w", key, err)
	}
	exists := err == nil
	if exists {
		stale := renew && s.Annotations[AnnCertParams] != params.annotation()
		if p, perr := certs.Parse(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey]); perr == nil && !stale &&
			!(renew && certs.Due(p.Cert, now, params.RenewBefore)) {
			return served{notAfter: p.Cert.NotAfter, bundle: string(s.Data[caKey])}, nil
		}
	}
	certPEM, keyPEM, caPEM, err := r.signer.Issue(ctx, serviceNames(vme), now, params.Duration)
	if err != nil {
		return served{}, fmt.Errorf("export %s/%s: server certificate: %w", vme.Namespace, vme.Name, err)
	}
	p, err := certs.Parse(certPEM, keyPEM)
	if err != nil {
		return served{}, fmt.Errorf("export %s/%s: the signer's certificate: %w", vme.Namespace, vme.Name, err)
	}
	want := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace, OwnerReferences: []metav1.OwnerReference{owner(vme)},
			Annotations: map[string]string{AnnCertParams: params.annotation()}},
		Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM, caKey: caPEM},
	}
	if exists {
		s.Data, s.Type = want.Data, want.Type
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[AnnCertParams] = params.annotation()
		err = r.client.Update(ctx, s)
	} else {
		err = r.client.Create(ctx, want)
	}
	if err != nil {
		return served{}, fmt.Errorf("writing Secret %s: %w", key, err)
	}
	if !exists {
		r.recorder.Eventf(vme, corev1.EventTypeNormal, EventSecretCreated, "Created certificate Secret %s", key.Name)
	}
	return served{notAfter: p.Cert.NotAfter, bundle: string(caPEM)}, nil
}

// manifestsName is the ConfigMap of an export's VM manifests, as KubeVirt
// names it.
func manifestsName(export string) string { return "exporter-vm-manifest-" + export }

// ensureManifests writes the VM manifests of src, for clients inside the
// cluster (trusting the export CA, ca) and, with an export proxy, outside
// it, into vme's ConfigMap, and returns its name.
func (r *Reconciler) ensureManifests(ctx context.Context, vme *exportv1.VirtualMachineExport, src source, ca, host, hostCert string) (string, error) {
	vm, err := r.expanded(ctx, src.vmObj)
	if err != nil {
		return "", fmt.Errorf("export %s/%s: the VM's manifest: %w", vme.Namespace, vme.Name, err)
	}
	data := map[string]string{}
	write := func(a export.Audience, base, cert string) error {
		b, err := export.EncodeManifests(export.VMManifests(vme.Name, vm, src.vols, src.sizes, base, cert))
		data[export.ManifestFile(a)] = string(b)
		return err
	}
	if err := write(export.Internal, export.InternalBase(vme.Namespace, vme.Name), ca); err != nil {
		return "", err
	}
	if host != "" {
		if err := write(export.External, export.ExternalBase(host, vme.Namespace, vme.Name), hostCert); err != nil {
			return "", err
		}
	}
	want := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: manifestsName(vme.Name), Namespace: vme.Namespace,
		OwnerReferences: []metav1.OwnerReference{owner(vme)}}, Data: data}
	if r.known.sameManifests(vme.UID, data) {
		return want.Name, nil
	}
	cm := &corev1.ConfigMap{}
	switch err := r.apiReader.Get(ctx, client.ObjectKeyFromObject(want), cm); {
	case apierrors.IsNotFound(err):
		if err := r.client.Create(ctx, want); err != nil {
			return "", fmt.Errorf("creating ConfigMap %s/%s: %w", want.Namespace, want.Name, err)
		}
		r.recorder.Eventf(vme, corev1.EventTypeNormal, EventManifestsCreated, "Created the VM manifests' ConfigMap %s", want.Name)
	case err != nil:
		return "", fmt.Errorf("reading ConfigMap %s/%s: %w", want.Namespace, want.Name, err)
	case !metav1.IsControlledBy(cm, vme):
		return "", fmt.Errorf("ConfigMap %s/%s exists and is not export %s's", want.Namespace, want.Name, vme.Name)
	case !equality.Semantic.DeepEqual(cm.Data, data):
		cm.Data = data
		if err := r.client.Update(ctx, cm); err != nil {
			return "", fmt.Errorf("updating ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
		}
	}
	r.known.wroteManifests(vme.UID, client.ObjectKeyFromObject(vme), data)
	return want.Name, nil
}

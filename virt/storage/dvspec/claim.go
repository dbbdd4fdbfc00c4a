package dvspec

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"

	"github.com/virtkit/virtkit/virt/storage/importer/contract"
)

// CDI's labels and annotations that virtkit sets, so that tools written
// for CDI recognise its claims and pods.
const (
	LabelApp          = "app"
	AppCDI            = "containerized-data-importer"
	LabelComponent    = "cdi.kubevirt.io"
	ComponentImporter = "importer"
	// ComponentUploadServer labels upload pods, as CDI's.
	ComponentUploadServer = "cdi-upload-server"
	// ComponentCloneSource labels the pod (and its Secret) that sends a
	// clone's disk from the source's namespace.
	ComponentCloneSource = "cdi-clone-source"

	AnnContentType = "cdi.kubevirt.io/storage.contentType"
	AnnSource      = "cdi.kubevirt.io/storage.import.source"
	AnnEndpoint    = "cdi.kubevirt.io/storage.import.endpoint"
	AnnImportPod   = "cdi.kubevirt.io/storage.import.importPodName"
	// AnnCloneRequest names a cloned claim's source, NAMESPACE/NAME.
	AnnCloneRequest = "k8s.io/CloneRequest"
	// AnnPopulatedFor marks a claim a DataVolume of that name filled.
	AnnPopulatedFor = "cdi.kubevirt.io/storage.populatedFor"
	// AnnAllowClaimAdoption lets a DataVolume take over an existing claim
	// of its name that no one controls, as filled: KubeVirt sets it on the
	// DataVolumes of VMs' dataVolumeTemplates.
	AnnAllowClaimAdoption = "cdi.kubevirt.io/allowClaimAdoption"
	// AnnPrePopulated on a DataVolume says its claim is filled by someone
	// else (a restore, say): it makes none, waits for it, and takes it
	// over as filled (CDI's annotation).
	AnnPrePopulated = "cdi.kubevirt.io/storage.prePopulated"
	// AnnUploadRequest marks a claim that takes an upload.
	AnnUploadRequest = "cdi.kubevirt.io/storage.upload.target"
	// AnnPodPhase and AnnPodReady mirror the phase and readiness of the
	// pod filling a claim onto it; KubeVirt's virtctl image-upload waits
	// on them.
	AnnPodPhase = "cdi.kubevirt.io/storage.pod.phase"
	AnnPodReady = "cdi.kubevirt.io/storage.pod.ready"
	// AnnImmediateBinding on a DataVolume or a claim that takes an upload
	// asks that its claim be bound at once, by the pod that fills it, even
	// in a class that binds on first consumer (CDI's annotation; KubeVirt's
	// virtctl image-upload --force-bind sets it).
	AnnImmediateBinding = "cdi.kubevirt.io/storage.bind.immediate.requested"
	// AnnSelectedNode is where the scheduler writes the node it picked
	// for a pod's claims that bind on first consumer.
	AnnSelectedNode = "volume.kubernetes.io/selected-node"
	// AnnRequiresScratch on a claim says the pods filling it get a
	// scratch claim: its image must be downloaded before it is converted
	// (an importer pod without one said so), or it takes uploads (CDI's
	// annotation).
	AnnRequiresScratch = "cdi.kubevirt.io/storage.import.requiresScratch"
	// AnnPreallocationApplied marks a claim whose disk the import
	// allocated whole (CDI's annotation).
	AnnPreallocationApplied = "cdi.kubevirt.io/storage.preallocation"
)

// IsArchive says whether dv's source is a tar archive extracted into its
// claim's file system (contentType archive) rather than a disk image.
func IsArchive(dv *cdiv1.DataVolume) bool {
	return dv.Spec.ContentType == cdiv1.DataVolumeArchive
}

// ImmediateBindingRequested says whether obj carries AnnImmediateBinding.
func ImmediateBindingRequested(obj metav1.Object) bool {
	_, ok := obj.GetAnnotations()[AnnImmediateBinding]
	return ok
}

// StorageClassOf is the StorageClass dv's claim asks for, "" when it names
// none (the cluster's default).
func StorageClassOf(dv *cdiv1.DataVolume) string {
	switch {
	case dv.Spec.Storage != nil && dv.Spec.Storage.StorageClassName != nil:
		return *dv.Spec.Storage.StorageClassName
	case dv.Spec.PVC != nil && dv.Spec.PVC.StorageClassName != nil:
		return *dv.Spec.PVC.StorageClassName
	}
	return ""
}

// UploadPodName is the name of the upload pod of the claim called claim,
// as CDI names it: the upload proxy finds the pod by it.
func UploadPodName(claim string) string { return "cdi-upload-" + claim }

// Claim returns the claim dv fills: named as dv, in its namespace,
// controlled by it. spec.pvc is taken as given; spec.storage gets the
// access modes and volume mode it does not name from the StorageProfile's
// claim property sets of its class, profile (PickPropertySet), else
// ReadWriteOnce and Filesystem, and, in Filesystem mode,
// the file system's overhead on top of the size asked for, so that the disk
// has that size (contract.RequiredSpace). A clone's spec.storage may leave
// the size out: the claim then gets the source claim's (src.ClaimSize);
// until that is known (in admission) the claim is returned without one.
func Claim(dv *cdiv1.DataVolume, src Source, overhead float64, profile []cdiv1.ClaimPropertySet) (*corev1.PersistentVolumeClaim, *field.Error) {
	spec := field.NewPath("spec")
	archive := IsArchive(dv)
	switch {
	case dv.Spec.ContentType != "" && dv.Spec.ContentType != cdiv1.DataVolumeKubeVirt && !archive:
		return nil, field.NotSupported(spec.Child("contentType"), dv.Spec.ContentType, []cdiv1.DataVolumeContentType{cdiv1.DataVolumeKubeVirt, cdiv1.DataVolumeArchive})
	case archive && src.Kind != contract.SourceHTTP && src.Kind != contract.SourceUpload:
		return nil, field.Invalid(spec.Child("contentType"), dv.Spec.ContentType, "an archive is imported from an http or upload source only")
	}
	var cs corev1.PersistentVolumeClaimSpec
	switch {
	case dv.Spec.PVC != nil && dv.Spec.Storage != nil:
		return nil, field.Invalid(spec.Child("storage"), "", "spec.pvc and spec.storage are exclusive")
	case dv.Spec.PVC != nil:
		cs = *dv.Spec.PVC.DeepCopy()
		if _, ok := cs.Resources.Requests[corev1.ResourceStorage]; !ok {
			return nil, field.Required(spec.Child("pvc", "resources", "requests", "storage"), "")
		}
		if archive && IsBlock(&corev1.PersistentVolumeClaim{Spec: cs}) {
			return nil, field.Invalid(spec.Child("pvc", "volumeMode"), corev1.PersistentVolumeBlock, "an archive is extracted into a Filesystem volume")
		}
	case dv.Spec.Storage != nil:
		st := dv.Spec.Storage.DeepCopy()
		size, ok := st.Resources.Requests[corev1.ResourceStorage]
		inferred := !ok && src.IsClone()
		if !ok && !inferred {
			return nil, field.Required(spec.Child("storage", "resources", "requests", "storage"), "a size is inferred only for a clone")
		}
		cs = corev1.PersistentVolumeClaimSpec{
			AccessModes: st.AccessModes, Selector: st.Selector, Resources: st.Resources, VolumeName: st.VolumeName,
			StorageClassName: st.StorageClassName, VolumeMode: st.VolumeMode, DataSource: st.DataSource, DataSourceRef: st.DataSourceRef,
		}
		if archive {
			// As CDI: an archive needs a file system.
			if cs.VolumeMode != nil && *cs.VolumeMode == corev1.PersistentVolumeBlock {
				return nil, field.Invalid(spec.Child("storage", "volumeMode"), corev1.PersistentVolumeBlock, "an archive is extracted into a Filesystem volume")
			}
			cs.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
		}
		if set := PickPropertySet(profile, cs.VolumeMode); set != nil {
			if len(cs.AccessModes) == 0 {
				cs.AccessModes = append([]corev1.PersistentVolumeAccessMode(nil), set.AccessModes...)
			}
			if cs.VolumeMode == nil && set.VolumeMode != nil {
				cs.VolumeMode = ptr.To(*set.VolumeMode)
			}
		}
		if len(cs.AccessModes) == 0 {
			cs.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
		}
		if cs.VolumeMode == nil {
			cs.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
		}
		cs.Resources.Requests = cs.Resources.Requests.DeepCopy()
		switch {
		case inferred && src.ClaimSize == nil:
			// Admission: the source's size is not known yet.
			return claimOf(dv, src, cs), nil
		case inferred:
			// The source claim's size holds the source's disk with its
			// overhead already.
			if cs.Resources.Requests == nil {
				cs.Resources.Requests = corev1.ResourceList{}
			}
			cs.Resources.Requests[corev1.ResourceStorage] = src.ClaimSize.DeepCopy()
		case *cs.VolumeMode == corev1.PersistentVolumeFilesystem:
			cs.Resources.Requests[corev1.ResourceStorage] = *resource.NewQuantity(contract.RequiredSpace(size.Value(), overhead), resource.BinarySI)
		}
	default:
		return nil, field.Required(spec.Child("storage"), "a DataVolume needs spec.storage or spec.pvc")
	}
	if q := cs.Resources.Requests[corev1.ResourceStorage]; q.Sign() <= 0 {
		return nil, field.Invalid(spec.Child("storage", "resources", "requests", "storage"), q.String(), "must be positive")
	}
	return claimOf(dv, src, cs), nil
}

// PickPropertySet is the StorageProfile claim property set a claim of
// volume mode mode (nil: any) takes its defaults from, as CDI picks it: the
// first of that mode, or the first of all; nil when there is none.
func PickPropertySet(sets []cdiv1.ClaimPropertySet, mode *corev1.PersistentVolumeMode) *cdiv1.ClaimPropertySet {
	for i := range sets {
		if len(sets[i].AccessModes) == 0 {
			continue
		}
		if mode == nil || (sets[i].VolumeMode != nil && *sets[i].VolumeMode == *mode) {
			return &sets[i]
		}
	}
	return nil
}

// NeedsSourceSize says whether dv's claim takes its size from its clone
// source (Source.ClaimSize).
func NeedsSourceSize(dv *cdiv1.DataVolume, src Source) bool {
	if !src.IsClone() || dv.Spec.Storage == nil {
		return false
	}
	_, ok := dv.Spec.Storage.Resources.Requests[corev1.ResourceStorage]
	return !ok
}

// claimOf is the claim of spec cs for dv, with CDI's labels and
// annotations, controlled by dv.
func claimOf(dv *cdiv1.DataVolume, src Source, cs corev1.PersistentVolumeClaimSpec) *corev1.PersistentVolumeClaim {
	ann := map[string]string{AnnContentType: string(cdiv1.DataVolumeKubeVirt)}
	if IsArchive(dv) {
		ann[AnnContentType] = string(cdiv1.DataVolumeArchive)
	}
	switch {
	case src.HTTP != nil:
		ann[AnnSource], ann[AnnEndpoint] = "http", src.Describe()
	case src.Image != "":
		ann[AnnSource], ann[AnnEndpoint] = "registry", src.Describe()
	case src.Claim != nil:
		ann[AnnCloneRequest] = src.Claim.Namespace + "/" + src.Claim.Name
	case src.Kind == contract.SourceUpload:
		ann[AnnUploadRequest] = ""
	default:
		ann[AnnSource] = "none"
	}
	return &corev1.PersistentVolumeClaim{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: dv.Namespace, Name: dv.Name,
			Labels:          map[string]string{LabelApp: AppCDI},
			Annotations:     ann,
			OwnerReferences: []metav1.OwnerReference{OwnerRef(dv)},
		},
		Spec: cs,
	}
}

// OwnerRef makes dv the controller of what it owns; blockOwnerDeletion
// keeps a foreground deletion of dv waiting for them.
func OwnerRef(dv *cdiv1.DataVolume) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: cdiv1.SchemeGroupVersion.String(), Kind: "DataVolume", Name: dv.Name, UID: dv.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

// ClaimCapacity is the claim's size: its bound capacity, else its request.
func ClaimCapacity(pvc *corev1.PersistentVolumeClaim) int64 {
	if q, ok := pvc.Status.Capacity[corev1.ResourceStorage]; ok {
		return q.Value()
	}
	q := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	return q.Value()
}

// IsBlock says whether the claim is a block volume.
func IsBlock(pvc *corev1.PersistentVolumeClaim) bool {
	return pvc.Spec.VolumeMode != nil && *pvc.Spec.VolumeMode == corev1.PersistentVolumeBlock
}

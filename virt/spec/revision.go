package spec

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	virtv1 "kubevirt.io/api/core/v1"
	apiinstancetype "kubevirt.io/api/instancetype"
	instancetypev1beta1 "kubevirt.io/api/instancetype/v1beta1"
)

// ErrRevisionData: a ControllerRevision does not hold an instancetype or
// preference this package reads (another kind, or a version other than
// instancetype.kubevirt.io/v1beta1).
var ErrRevisionData = errors.New("not an instancetype or preference revision")

// RevisionName is the name of the ControllerRevision that keeps a copy of an
// instancetype or preference for a VM, as KubeVirt names it: the VM's name,
// the object's name, version, UID and generation.
func RevisionName(vmName, objName, version string, uid types.UID, generation int64) string {
	return fmt.Sprintf("%s-%s-%s-%s-%d", vmName, objName, version, uid, generation)
}

// NewInstancetypeRevision returns the ControllerRevision that keeps it, a
// namespaced (it) or cluster-wide (cit) instancetype (one of them, the other
// nil), for vm: the copy the VM's VMIs are built from from then on, so that
// a later edit of the instancetype does not change the VM. It is what
// KubeVirt's VM controller stores: owned by the VM, labelled with the
// object's kind, name, UID, version and generation, holding the object
// without its labels, annotations, finalizers, owners and managed fields.
func NewInstancetypeRevision(vm *virtv1.VirtualMachine, it *instancetypev1beta1.VirtualMachineInstancetype,
	cit *instancetypev1beta1.VirtualMachineClusterInstancetype) (*appsv1.ControllerRevision, error) {
	switch {
	case it != nil:
		c := it.DeepCopy()
		return newRevision(vm, c, &c.ObjectMeta, &c.TypeMeta, KindInstancetype)
	case cit != nil:
		c := cit.DeepCopy()
		return newRevision(vm, c, &c.ObjectMeta, &c.TypeMeta, KindClusterInstancetype)
	}
	return nil, errors.New("spec: an instancetype revision needs an instancetype")
}

// NewPreferenceRevision is NewInstancetypeRevision for a preference.
func NewPreferenceRevision(vm *virtv1.VirtualMachine, p *instancetypev1beta1.VirtualMachinePreference,
	cp *instancetypev1beta1.VirtualMachineClusterPreference) (*appsv1.ControllerRevision, error) {
	switch {
	case p != nil:
		c := p.DeepCopy()
		return newRevision(vm, c, &c.ObjectMeta, &c.TypeMeta, KindPreference)
	case cp != nil:
		c := cp.DeepCopy()
		return newRevision(vm, c, &c.ObjectMeta, &c.TypeMeta, KindClusterPreference)
	}
	return nil, errors.New("spec: a preference revision needs a preference")
}

// newRevision builds the revision of obj (a copy the caller owns, whose
// meta and type are m and tm) of kind.
func newRevision(vm *virtv1.VirtualMachine, obj runtime.Object, m *metav1.ObjectMeta, tm *metav1.TypeMeta, kind string) (*appsv1.ControllerRevision, error) {
	version := instancetypev1beta1.SchemeGroupVersion.Version
	tm.APIVersion, tm.Kind = instancetypev1beta1.SchemeGroupVersion.String(), kind
	name, uid, gen := m.Name, m.UID, m.Generation
	m.Labels, m.Annotations, m.Finalizers, m.OwnerReferences, m.ManagedFields = nil, nil, nil, nil, nil
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("spec: %s %q: %w", kind, name, err)
	}
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name:            RevisionName(vm.Name, name, version, uid, gen),
			Namespace:       vm.Namespace,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(vm, virtv1.VirtualMachineGroupVersionKind)},
			Labels: map[string]string{
				apiinstancetype.ControllerRevisionObjectGenerationLabel: strconv.FormatInt(gen, 10),
				apiinstancetype.ControllerRevisionObjectKindLabel:       kind,
				apiinstancetype.ControllerRevisionObjectNameLabel:       name,
				apiinstancetype.ControllerRevisionObjectUIDLabel:        string(uid),
				apiinstancetype.ControllerRevisionObjectVersionLabel:    version,
			},
		},
		Data: runtime.RawExtension{Raw: raw},
	}, nil
}

// revisionDoc is what a revision's data is read as: the kept object's type
// and its spec, left raw until the kind is known.
type revisionDoc struct {
	metav1.TypeMeta `json:",inline"`
	Spec            json.RawMessage `json:"spec"`
}

// readRevision decodes rev's data when its kind is one of kinds.
func readRevision(rev *appsv1.ControllerRevision, into any, kinds ...string) error {
	raw := rev.Data.Raw
	if len(raw) == 0 && rev.Data.Object != nil {
		b, err := json.Marshal(rev.Data.Object)
		if err != nil {
			return fmt.Errorf("spec: ControllerRevision %s/%s: %w", rev.Namespace, rev.Name, err)
		}
		raw = b
	}
	var doc revisionDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("spec: ControllerRevision %s/%s: data: %w", rev.Namespace, rev.Name, err)
	}
	if doc.APIVersion != instancetypev1beta1.SchemeGroupVersion.String() || !slices.Contains(kinds, doc.Kind) {
		return fmt.Errorf("spec: ControllerRevision %s/%s holds %s %s, want %v of %s: %w", rev.Namespace, rev.Name,
			doc.APIVersion, doc.Kind, kinds, instancetypev1beta1.SchemeGroupVersion, ErrRevisionData)
	}
	if err := json.Unmarshal(doc.Spec, into); err != nil {
		return fmt.Errorf("spec: ControllerRevision %s/%s: data.spec: %w", rev.Namespace, rev.Name, err)
	}
	return nil
}

// InstancetypeFromRevision is the instancetype spec rev keeps (either kind).
func InstancetypeFromRevision(rev *appsv1.ControllerRevision) (*instancetypev1beta1.VirtualMachineInstancetypeSpec, error) {
	var s instancetypev1beta1.VirtualMachineInstancetypeSpec
	if err := readRevision(rev, &s, KindInstancetype, KindClusterInstancetype); err != nil {
		return nil, err
	}
	return &s, nil
}

// PreferenceFromRevision is the preference spec rev keeps (either kind).
func PreferenceFromRevision(rev *appsv1.ControllerRevision) (*instancetypev1beta1.VirtualMachinePreferenceSpec, error) {
	var s instancetypev1beta1.VirtualMachinePreferenceSpec
	if err := readRevision(rev, &s, KindPreference, KindClusterPreference); err != nil {
		return nil, err
	}
	return &s, nil
}

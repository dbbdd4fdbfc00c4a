package handler

import (
	"context"
	"fmt"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/controllers/conditions"
	vmictl "github.com/virtkit/virtkit/controllers/vmi"
)

// ReasonDataVolumeNotReady is the Synchronized=False reason of a VMI the
// handler does not start because a DataVolume it boots from is not
// filled.
const ReasonDataVolumeNotReady = "DataVolumeNotReady"

// dataVolumePoll is how often a VMI held for a DataVolume looks again: the
// handler does not watch DataVolumes.
const dataVolumePoll = 5 * time.Second

// dataVolumeNotReady names the first dataVolume volume of vmi whose
// DataVolume is not filled, with its phase; "" when there is none. The
// VMI controller holds the launcher pod until they are; this is the
// node's own check before a guest runs on a disk still being written
// (one recreated under the same name, say). A DataVolume that does not
// exist, or an API without DataVolumes, leaves the claim as it is.
func (r *Reconciler) dataVolumeNotReady(ctx context.Context, vmi *virtv1.VirtualMachineInstance) (string, error) {
	for _, v := range vmi.Spec.Volumes {
		if v.DataVolume == nil || v.DataVolume.Hotpluggable {
			continue
		}
		dv := &cdiv1.DataVolume{}
		switch err := r.reader.Get(ctx, client.ObjectKey{Namespace: vmi.Namespace, Name: v.DataVolume.Name}, dv); {
		case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
			continue
		case err != nil:
			return "", fmt.Errorf("reading DataVolume %s/%s: %w", vmi.Namespace, v.DataVolume.Name, err)
		}
		if vmictl.DataVolumeReady(dv, true) {
			continue
		}
		phase := string(dv.Status.Phase)
		if phase == "" {
			phase = "without a phase yet"
		}
		return fmt.Sprintf("DataVolume %s of volume %s is %s, not Succeeded: the guest does not start on a disk being filled", dv.Name, v.Name, phase), nil
	}
	return "", nil
}

// holdForDataVolume writes Synchronized=False with msg, if it changed.
func (r *Reconciler) holdForDataVolume(ctx context.Context, vmi *virtv1.VirtualMachineInstance, msg string) error {
	if c := conditions.VMI().Find(vmi.Status.Conditions, virtv1.VirtualMachineInstanceSynchronized); c != nil &&
		c.Status == k8sv1.ConditionFalse && c.Reason == ReasonDataVolumeNotReady && c.Message == msg {
		return nil
	}
	st := *vmi.Status.DeepCopy()
	conditions.VMI().Set(&st.Conditions, virtv1.VirtualMachineInstanceCondition{
		Type: virtv1.VirtualMachineInstanceSynchronized, Status: k8sv1.ConditionFalse, Reason: ReasonDataVolumeNotReady, Message: msg,
	}, metav1.NewTime(r.clock.Now().Truncate(time.Second)))
	return r.writeStatus(ctx, vmi, st)
}

package cdiresource

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	conditionsv1 "github.com/openshift/custom-resource-status/conditions/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	sdkapi "kubevirt.io/controller-lifecycle-operator-sdk/api"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

func TestNextStatus(t *testing.T) {
	t1 := metav1.NewTime(time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC))
	t2 := metav1.NewTime(t1.Add(time.Minute))
	cond := func(typ conditionsv1.ConditionType, s corev1.ConditionStatus, reason, msg string, at metav1.Time) conditionsv1.Condition {
		return conditionsv1.Condition{Type: typ, Status: s, Reason: reason, Message: msg, LastTransitionTime: at, LastHeartbeatTime: at}
	}
	deployed := func(at metav1.Time) sdkapi.Status {
		return sdkapi.Status{Phase: sdkapi.PhaseDeployed, Conditions: []conditionsv1.Condition{
			cond(conditionsv1.ConditionAvailable, corev1.ConditionTrue, ReasonDeployCompleted, MessageDeployed, at),
			cond(conditionsv1.ConditionProgressing, corev1.ConditionFalse, "", "", at),
			cond(conditionsv1.ConditionDegraded, corev1.ConditionFalse, "", "", at),
		}}
	}
	for _, tc := range []struct {
		name   string
		cur    sdkapi.Status
		active bool
		want   sdkapi.Status
	}{
		{"new and active", sdkapi.Status{}, true, deployed(t2)},
		{"unchanged: the times stay", deployed(t1), true, deployed(t1)},
		{"a second resource", deployed(t1), false, sdkapi.Status{Phase: sdkapi.PhaseError, Conditions: []conditionsv1.Condition{
			cond(conditionsv1.ConditionAvailable, corev1.ConditionFalse, "", "", t2),
			cond(conditionsv1.ConditionProgressing, corev1.ConditionFalse, "", "", t1),
			cond(conditionsv1.ConditionDegraded, corev1.ConditionTrue, ReasonConfigError, MessageUnwanted, t2),
		}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cur := tc.cur
			before := append([]conditionsv1.Condition(nil), cur.Conditions...)
			got := NextStatus(cur, tc.active, t2)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("NextStatus (-want +got):\n%s", diff)
			}
			if !cmp.Equal(before, cur.Conditions) {
				t.Errorf("NextStatus changed its argument's conditions")
			}
		})
	}
}

// TestConfigSpecChanged: the CDIConfig's status writes do not reconcile
// the CDI resources; its spec changes do.
func TestConfigSpecChanged(t *testing.T) {
	old := &cdiv1.CDIConfig{Spec: cdiv1.CDIConfigSpec{UploadProxyURLOverride: ptr.To("https://a")}}
	status := old.DeepCopy()
	status.Status.UploadProxyURL = ptr.To("https://a")
	spec := old.DeepCopy()
	spec.Spec.UploadProxyURLOverride = ptr.To("https://b")
	p := configSpecChanged()
	if p.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: status}) {
		t.Error("a status write passes")
	}
	if !p.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: spec}) {
		t.Error("a spec change does not pass")
	}
	if !p.Create(event.CreateEvent{Object: old}) || !p.Delete(event.DeleteEvent{Object: old}) {
		t.Error("creation or deletion does not pass")
	}
}

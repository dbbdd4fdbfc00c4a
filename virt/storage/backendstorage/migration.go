package backendstorage

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"
)

// LabelMigration is the label on a claim made for the target of a live
// migration; its value names the migration (KubeVirt's
// kubevirt.io/migrationName).
const LabelMigration = virtv1.MigrationNameLabel

// ForMigration turns c, a new claim from Claim, into the claim of the
// target of migration mig: labelled with LabelMigration only, so that it
// is not the VM's claim (Find does not see it) until the migration
// succeeded and Handoff labels it. Every migration gets a claim of its
// own, whatever the access mode: the guest's EFI variables and its vTPM's
// state travel in QEMU's migration stream, and the two sides must not
// share one folder (swtpm locks its state, and both QEMUs would write one
// variable store).
func ForMigration(c *corev1.PersistentVolumeClaim, mig string) *corev1.PersistentVolumeClaim {
	c.Labels = map[string]string{LabelMigration: mig}
	return c
}

// FindMigration is the claim made for the target of migration mig among
// claims (those of its namespace), nil when there is none. Claims being
// deleted do not count.
func FindMigration(claims []corev1.PersistentVolumeClaim, mig string) *corev1.PersistentVolumeClaim {
	for i := range claims {
		if c := &claims[i]; c.DeletionTimestamp == nil && c.Labels[LabelMigration] == mig {
			return c
		}
	}
	return nil
}

// Handoff is the labels of target, the claim of a migration of vm's VMI
// that succeeded, once it becomes the VM's claim: LabelVM set to vm,
// LabelMigration gone. It refuses a claim labelled for another VM.
func Handoff(target *corev1.PersistentVolumeClaim, vm string) (map[string]string, error) {
	if other, ok := target.Labels[LabelVM]; ok && other != vm {
		return nil, fmt.Errorf("backend-storage claim %s/%s: metadata.labels[%s]: labelled for VM %q, not %q",
			target.Namespace, target.Name, LabelVM, other, vm)
	}
	labels := map[string]string{}
	for k, v := range target.Labels {
		if k != LabelMigration {
			labels[k] = v
		}
	}
	labels[LabelVM] = vm
	return labels, nil
}

package deploy

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiinstancetype "kubevirt.io/api/instancetype"
)

// KubeVirt's user ClusterRoles, aggregated into Kubernetes' admin, edit
// and view roles.
const (
	AdminClusterRoleName = "kubevirt.io:admin"
	EditClusterRoleName  = "kubevirt.io:edit"
	ViewClusterRoleName  = "kubevirt.io:view"
)

// UserRoles returns KubeVirt's user ClusterRoles over virtkit's kinds:
// kubevirt.io:admin and kubevirt.io:edit (everything a namespace's
// administrator or editor does with VMs, VMIs, replica sets, pools, VM
// snapshots and restores, clones, exports and instancetypes; reading migrations,
// which kubevirt.io:migrate grants) and kubevirt.io:view (reading them).
// Their aggregation labels put them into Kubernetes' admin, edit and
// view roles, so a RoleBinding to those grants them in a namespace, as
// with KubeVirt. The verbs on subresources (start, console, ...) come with
// virt-api's kubevirt.io:subresources-edit.
func UserRoles() []*rbacv1.ClusterRole {
	write := []string{"get", "delete", "create", "update", "patch", "list", "watch"}
	read := []string{"get", "list", "watch"}
	kinds := func(verbs []string) []rbacv1.PolicyRule {
		return []rbacv1.PolicyRule{
			{APIGroups: []string{"kubevirt.io"}, Verbs: verbs, Resources: []string{"virtualmachines", "virtualmachineinstances",
				"virtualmachineinstancepresets", "virtualmachineinstancereplicasets"}},
			{APIGroups: []string{"snapshot.kubevirt.io"}, Verbs: verbs, Resources: []string{"virtualmachinesnapshots",
				"virtualmachinesnapshotcontents", "virtualmachinerestores"}},
			{APIGroups: []string{"clone.kubevirt.io"}, Verbs: verbs, Resources: []string{"virtualmachineclones"}},
			{APIGroups: []string{"export.kubevirt.io"}, Verbs: verbs, Resources: []string{"virtualmachineexports"}},
			{APIGroups: []string{apiinstancetype.GroupName}, Verbs: verbs, Resources: []string{apiinstancetype.PluralResourceName,
				apiinstancetype.ClusterPluralResourceName, apiinstancetype.PluralPreferenceResourceName, apiinstancetype.ClusterPluralPreferenceResourceName}},
			{APIGroups: []string{"pool.kubevirt.io"}, Verbs: verbs, Resources: []string{"virtualmachinepools"}},
		}
	}
	always := []rbacv1.PolicyRule{
		{APIGroups: []string{"kubevirt.io"}, Verbs: read, Resources: []string{"virtualmachineinstancemigrations"}},
		{APIGroups: []string{"kubevirt.io"}, Verbs: []string{"get", "list"}, Resources: []string{"kubevirts"}},
		{APIGroups: []string{"migrations.kubevirt.io"}, Verbs: read, Resources: []string{"migrationpolicies"}},
	}
	role := func(name, aggregate string, rules []rbacv1.PolicyRule) *rbacv1.ClusterRole {
		return &rbacv1.ClusterRole{
			TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{Label: "virtkit",
				"rbac.authorization.k8s.io/aggregate-to-" + aggregate: "true"}},
			Rules: append(rules, always...),
		}
	}
	return []*rbacv1.ClusterRole{
		role(AdminClusterRoleName, "admin", kinds(append(write, "deletecollection"))),
		role(EditClusterRoleName, "edit", kinds(write)),
		role(ViewClusterRoleName, "view", kinds(read)),
	}
}

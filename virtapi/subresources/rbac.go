package subresources

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Names of the ClusterRoles and binding RBAC returns, KubeVirt's.
const (
	// DefaultClusterRoleName lets every authenticated user read the
	// version (virtctl version); KubeVirt binds it to system:authenticated.
	DefaultClusterRoleName = "kubevirt.io:default"
	// EditClusterRoleName holds every subresource verb; it aggregates into
	// the built-in admin and edit ClusterRoles, as KubeVirt's kubevirt.io:edit
	// does, so namespace editors can start, stop and open consoles.
	EditClusterRoleName = "kubevirt.io:subresources-edit"
	// MigrateClusterRoleName holds the right to migrate: the migrate verb
	// and VirtualMachineInstanceMigrations. As KubeVirt's kubevirt.io:migrate
	// (since KubeVirt 1.5) it aggregates into no built-in role: moving a
	// guest between nodes is the cluster's business, so a cluster admin
	// binds it to whom it trusts.
	MigrateClusterRoleName = "kubevirt.io:migrate"
)

// RBAC returns the ClusterRoles (and the binding of the default one) a
// cluster needs for users to call this API: kubevirt.io:default (get, list
// on version for system:authenticated), kubevirt.io:subresources-edit
// (update on the VM and VMI verbs but migrate, get on console, vnc,
// vnc/screenshot, portforward and expand-spec,
// aggregated into admin and edit) and kubevirt.io:migrate (the migrate verb
// and VirtualMachineInstanceMigrations, bound by hand). The resource and
// verb names are KubeVirt's, so Roles written for KubeVirt work unchanged.
func RBAC() (roles []*rbacv1.ClusterRole, binding *rbacv1.ClusterRoleBinding) {
	labels := map[string]string{"app.kubernetes.io/part-of": "virtkit"}
	editLabels := map[string]string{"app.kubernetes.io/part-of": "virtkit",
		"rbac.authorization.k8s.io/aggregate-to-admin": "true", "rbac.authorization.k8s.io/aggregate-to-edit": "true"}
	def := &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: DefaultClusterRoleName, Labels: labels},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{Group}, Resources: []string{"version", "guestfs"}, Verbs: []string{"get", "list"}}},
	}
	edit := &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: EditClusterRoleName, Labels: editLabels},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{Group}, Verbs: []string{"update"}, Resources: []string{
				"virtualmachines/start", "virtualmachines/stop", "virtualmachines/restart",
				"virtualmachines/addvolume", "virtualmachines/removevolume",
				"virtualmachineinstances/pause", "virtualmachineinstances/unpause", "virtualmachineinstances/softreboot", "virtualmachineinstances/reset",
				"virtualmachineinstances/addvolume", "virtualmachineinstances/removevolume",
				"virtualmachineinstances/freeze", "virtualmachineinstances/unfreeze"}},
			{APIGroups: []string{Group}, Verbs: []string{"get"}, Resources: []string{
				"virtualmachineinstances/console", "virtualmachineinstances/vnc", "virtualmachineinstances/vnc/screenshot",
				"virtualmachineinstances/portforward", "virtualmachines/portforward", "virtualmachines/expand-spec",
				"virtualmachineinstances/guestosinfo", "virtualmachineinstances/userlist", "virtualmachineinstances/filesystemlist"}},
			{APIGroups: []string{Group}, Verbs: []string{"update"}, Resources: []string{ExpandVMSpecResource}},
		},
	}
	migrate := &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: MigrateClusterRoleName, Labels: labels},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{Group}, Verbs: []string{"update"}, Resources: []string{"virtualmachines/migrate",
				"virtualmachines/evacuatecancel", "virtualmachineinstances/evacuatecancel"}},
			{APIGroups: []string{"kubevirt.io"}, Resources: []string{"virtualmachineinstancemigrations"},
				Verbs: []string{"get", "delete", "create", "update", "patch", "list", "watch", "deletecollection"}},
		},
	}
	binding = &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: DefaultClusterRoleName, Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: DefaultClusterRoleName},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "Group", Name: "system:authenticated"}},
	}
	return []*rbacv1.ClusterRole{def, edit, migrate}, binding
}

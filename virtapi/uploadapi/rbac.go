package uploadapi

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
)

// Names of the ClusterRoles RBAC returns, CDI's.
const (
	EditClusterRoleName = "cdi.kubevirt.io:edit"
	ViewClusterRoleName = "cdi.kubevirt.io:view"
	// ConfigReaderClusterRoleName lets every authenticated user read the
	// CDIConfig (where virtctl image-upload finds the upload proxy) and the
	// StorageProfiles.
	ConfigReaderClusterRoleName = "cdi.kubevirt.io:config-reader"
)

// RBAC returns CDI's user ClusterRoles, and the binding of the config
// reader to system:authenticated: cdi.kubevirt.io:config-reader (reading
// CDIConfigs), cdi.kubevirt.io:edit (DataVolumes
// and DataSources, cloning from the namespace's claims (create on
// datavolumes/source), and upload tokens; aggregated into admin and edit) and cdi.kubevirt.io:view (reading them; aggregated into view).
func RBAC() ([]*rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding) {
	role := func(name string, aggregate []string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
		labels := map[string]string{"app.kubernetes.io/part-of": "virtkit"}
		for _, a := range aggregate {
			labels["rbac.authorization.k8s.io/aggregate-to-"+a] = "true"
		}
		return &rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Rules:      rules,
		}
	}
	cdi := cdiv1.SchemeGroupVersion.Group
	binding := &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: ConfigReaderClusterRoleName, Labels: map[string]string{"app.kubernetes.io/part-of": "virtkit"}},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: ConfigReaderClusterRoleName},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "Group", Name: "system:authenticated"}},
	}
	return []*rbacv1.ClusterRole{
		role(ConfigReaderClusterRoleName, nil,
			rbacv1.PolicyRule{APIGroups: []string{cdi}, Resources: []string{"cdiconfigs", "storageprofiles"}, Verbs: []string{"get", "list", "watch"}}),
		role(EditClusterRoleName, []string{"admin", "edit"},
			rbacv1.PolicyRule{APIGroups: []string{cdi}, Resources: []string{"datavolumes", "datasources"},
				Verbs: []string{"*"}},
			rbacv1.PolicyRule{APIGroups: []string{cdi}, Resources: []string{"datavolumes/source"}, Verbs: []string{"create"}},
			rbacv1.PolicyRule{APIGroups: []string{Group}, Resources: []string{Resource}, Verbs: []string{"*"}}),
		role(ViewClusterRoleName, []string{"view"},
			rbacv1.PolicyRule{APIGroups: []string{cdi}, Resources: []string{"datavolumes", "datasources"},
				Verbs: []string{"get", "list", "watch"}}),
	}, binding
}

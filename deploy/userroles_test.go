package deploy_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit/deploy"
	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/internal/testenv/kubeenv"
)

// On a real apiserver: a namespace's editor (bound to kubevirt.io:edit)
// runs VMs, snapshots, restores, clones and pools there, reads
// migrations but starts none, and writes no status; a viewer reads and
// writes nothing; neither reaches another namespace. Each role carries the
// aggregation label of its Kubernetes role.
func TestUserRoles(t *testing.T) {
	env := kubeenv.ControlPlane(t)
	c := env.Client
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, name := range []string{"team", "other"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	aggregate := map[string]string{deploy.AdminClusterRoleName: "admin", deploy.EditClusterRoleName: "edit", deploy.ViewClusterRoleName: "view"}
	for _, r := range deploy.UserRoles() {
		if r.Labels["rbac.authorization.k8s.io/aggregate-to-"+aggregate[r.Name]] != "true" {
			t.Errorf("%s labels %v: want it aggregated into %s", r.Name, r.Labels, aggregate[r.Name])
		}
		if err := deploy.Apply(ctx, c, r); err != nil {
			t.Fatal(err)
		}
	}
	for user, role := range map[string]string{"eve": deploy.EditClusterRoleName, "vic": deploy.ViewClusterRoleName} {
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: user},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}}}
		if err := c.Create(ctx, rb); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		user, ns, verb, group, resource string
		want                            bool
	}{
		{"eve", "team", "create", "kubevirt.io", "virtualmachines", true},
		{"eve", "team", "delete", "kubevirt.io", "virtualmachineinstances", true},
		{"eve", "team", "create", "snapshot.kubevirt.io", "virtualmachinesnapshots", true},
		{"eve", "team", "create", "snapshot.kubevirt.io", "virtualmachinerestores", true},
		{"eve", "team", "create", "clone.kubevirt.io", "virtualmachineclones", true},
		{"eve", "team", "patch", "pool.kubevirt.io", "virtualmachinepools", true},
		{"eve", "team", "create", "instancetype.kubevirt.io", "virtualmachineinstancetypes", true},
		{"eve", "team", "list", "kubevirt.io", "virtualmachineinstancemigrations", true},
		{"eve", "team", "create", "kubevirt.io", "virtualmachineinstancemigrations", false},
		{"eve", "team", "update", "kubevirt.io", "virtualmachineinstances/status", false},
		{"eve", "team", "update", "snapshot.kubevirt.io", "virtualmachinesnapshots/status", false},
		{"eve", "team", "deletecollection", "kubevirt.io", "virtualmachines", false},
		{"eve", "other", "create", "kubevirt.io", "virtualmachines", false},
		{"vic", "team", "get", "clone.kubevirt.io", "virtualmachineclones", true},
		{"vic", "team", "watch", "kubevirt.io", "virtualmachines", true},
		{"vic", "team", "create", "kubevirt.io", "virtualmachines", false},
		{"vic", "other", "get", "kubevirt.io", "virtualmachines", false},
	}
	// The apiserver's RBAC authorizer reads roles and bindings through an
	// informer: it sees the ones just made a moment later. Every answer
	// must hold at once.
	testenv.Eventually(ctx, t, "every SubjectAccessReview answered as the roles say", func() (bool, string) {
		var wrong []string
		for _, tc := range cases {
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: tc.user,
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: tc.ns, Verb: tc.verb, Group: tc.group, Resource: tc.resource}}}
			if err := c.Create(ctx, sar); err != nil {
				t.Fatal(err)
			}
			if sar.Status.Allowed != tc.want {
				wrong = append(wrong, fmt.Sprintf("%s %s %s.%s in %s: allowed %v, want %v", tc.user, tc.verb, tc.resource, tc.group, tc.ns, sar.Status.Allowed, tc.want))
			}
		}
		return len(wrong) == 0, strings.Join(wrong, "; ")
	})
}

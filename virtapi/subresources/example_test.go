package subresources_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/virtapi/subresources"
)

// The API is one http.Handler over a Kubernetes client. In a cluster it sits
// behind the aggregator: WithAuthenticator(&frontproxy.Authenticator{...})
// trusts the aggregator's identity headers, the default authorizer asks RBAC
// with a SubjectAccessReview, and WithLocator finds each node's handler.
// Here `virtctl start` of a Halted VM switches it to Always.
func Example() {
	halted := virtv1.RunStrategyHalted
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(&virtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "vm1"},
		Spec:       virtv1.VirtualMachineSpec{RunStrategy: &halted, Template: template()},
	}).Build()
	api := subresources.New(c, subresources.WithAuthenticator(anyone{}), subresources.WithAuthorizer(allowAll{}))

	rec := httptest.NewRecorder()
	api.ServeHTTP(rec, httptest.NewRequest("PUT", subresources.Prefix+"/namespaces/default/virtualmachines/vm1/start", nil))
	var vm virtv1.VirtualMachine
	_ = c.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "vm1"}, &vm)
	fmt.Println(rec.Code, *vm.Spec.RunStrategy)
	// Output: 202 Always
}

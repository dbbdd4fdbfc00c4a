package deploy

import (
	"fmt"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// HandlerNodeRestriction names the ValidatingAdmissionPolicy, and its
// binding, that confine each virt-handler to its own node: RBAC lets the
// handlers write Nodes and VMIs, and this policy lets each write only its
// Node and the VMIs on it (or migrating to it). A node's credentials then
// reach no other node's guests.
const HandlerNodeRestriction = "virtkit-handler-node-restriction"

// NodeNameExtra is the user extra the apiserver gives the service account
// token of a pod that runs on a node: the node's name. The kubelet mounts
// such a token into virt-handler's pod.
const NodeNameExtra = "authentication.kubernetes.io/node-name"

// handlerNodeRestriction is the policy and its binding for the handler's
// service account in h.Namespace.
func handlerNodeRestriction(h Handler) []client.Object {
	user := fmt.Sprintf("system:serviceaccount:%s:%s", h.Namespace, HandlerServiceAccount)
	update := []admissionv1.OperationType{admissionv1.Update}
	rule := func(group string, resources ...string) admissionv1.NamedRuleWithOperations {
		return admissionv1.NamedRuleWithOperations{RuleWithOperations: admissionv1.RuleWithOperations{Operations: update,
			Rule: admissionv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: resources}}}
	}
	fail := admissionv1.Fail
	labels := map[string]string{virtv1.AppLabel: HandlerName}
	// The node of a VMI, and the node it migrates to, as the VMI was
	// before the write: a handler may write the VMIs of its node and take
	// over those that migrate to it.
	const vmiOnNode = `has(oldObject.status) && (` +
		`(has(oldObject.status.nodeName) && oldObject.status.nodeName == variables.node) || ` +
		`(has(oldObject.status.migrationState) && has(oldObject.status.migrationState.targetNode) && oldObject.status.migrationState.targetNode == variables.node))`
	policy := &admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: HandlerNodeRestriction, Labels: labels},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{
				rule("", "nodes", "nodes/status"),
				rule(virtv1.SchemeGroupVersion.Group, "virtualmachineinstances", "virtualmachineinstances/status"),
			}},
			MatchConditions: []admissionv1.MatchCondition{{Name: "virt-handler", Expression: fmt.Sprintf("request.userInfo.username == %q", user)}},
			Variables: []admissionv1.Variable{{Name: "node", Expression: fmt.Sprintf(
				"%q in request.userInfo.extra && size(request.userInfo.extra[%q]) == 1 ? request.userInfo.extra[%q][0] : ''",
				NodeNameExtra, NodeNameExtra, NodeNameExtra)}},
			Validations: []admissionv1.Validation{
				{
					Expression: "variables.node != ''",
					Message:    "virt-handler writes only with the token of its pod, which names its node (" + NodeNameExtra + ")",
					Reason:     new(metav1.StatusReasonForbidden),
				},
				{
					Expression:        "request.resource.resource != 'nodes' || object.metadata.name == variables.node",
					MessageExpression: "'the virt-handler of node ' + variables.node + ' may not write node ' + object.metadata.name",
					Reason:            new(metav1.StatusReasonForbidden),
				},
				{
					Expression: "request.resource.resource != 'virtualmachineinstances' || (" + vmiOnNode +
						" && (!has(object.status) || !has(object.status.nodeName) || object.status.nodeName == variables.node ||" +
						" (has(oldObject.status.nodeName) && object.status.nodeName == oldObject.status.nodeName)))",
					MessageExpression: "'the virt-handler of node ' + variables.node + ' may write only the VirtualMachineInstances on its node or migrating to it, not ' + object.metadata.namespace + '/' + object.metadata.name",
					Reason:            new(metav1.StatusReasonForbidden),
				},
			},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: HandlerNodeRestriction, Labels: labels},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: HandlerNodeRestriction,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny}},
	}
	return []client.Object{policy, binding}
}

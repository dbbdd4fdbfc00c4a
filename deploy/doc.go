// Package deploy holds what a cluster needs before virtkit's daemons can
// serve it: the CustomResourceDefinitions of the kubevirt.io groups
// (generated into crds/ by `make generate`, embedded here so a built binary
// carries them), and the objects that make the apiserver call virt-api (its
// Service, the subresources APIService, the webhook configurations) with the
// ClusterRoles of the subresource verbs, and what runs the daemons: virt-api
// and virt-controller as Deployments ([APIObjects], [ControllerObjects]),
// virt-handler as a DaemonSet ([HandlerObjects]), each with its
// ServiceAccount (KubeVirt's names, [PrivilegedUsers]) and ClusterRole.
// [Apply] creates or updates any of them, so installing twice is harmless.
//
// It builds objects from admission, subresources and the launcher contract's
// node folders; it runs nothing. daemons/virt-api --install and
// daemons/virt-local use it.
package deploy

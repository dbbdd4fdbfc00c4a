// Package operator is virt-operator's library: it installs virtkit on a
// cluster from the kubevirt.io/v1 KubeVirt CR, as KubeVirt's operator
// does, and keeps the installation in shape.
//
// It owns:
//   - the plan of what an installation is ([Components]): the CRDs other
//     than KubeVirt's own, each daemon's ServiceAccount and least-privilege
//     RBAC, virt-api and virt-controller as Deployments, virt-handler as a
//     DaemonSet, virt-api's Service, the APIService and the webhook
//     configurations, all built by the deploy package and marked with
//     [ManagedByLabel];
//   - the certificates ([Certificates]): a CA in the Secret and ConfigMap
//     kubevirt-ca, and the serving and client certificates of virt-api and
//     virt-handler, renewed before they expire as the CR's
//     certificateRotateStrategy says;
//   - the KubeVirt CR's status: KubeVirt's phases (Deploying, Deployed,
//     Deleting, Deleted), conditions and their reasons ([Status]);
//   - uninstalling: deleting the CR removes what the operator made, in
//     KubeVirt's order, unless uninstallStrategy
//     BlockUninstallIfWorkloadsExist and VMs remain.
//
// The plan and the status are pure functions of plain data; [Reconciler]
// is the controller-runtime reconciler that applies them (server-side
// apply, so an edited or deleted object comes back). daemons/virt-operator
// is its thin daemon. docs/operator.md explains it to users.
package operator

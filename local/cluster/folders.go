package cluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vmictl "github.com/virtkit/virtkit/controllers/vmi"
)

// LauncherFolder is the node folder of a launcher pod of v in the cluster,
// as the node's handler finds it: the pod's emptyDir in its node's pods
// folder (PodsDir). The pod is v's own with
// migration "", else that migration's target pod; "" with an error while
// no such pod is bound to a node.
func (c Config) LauncherFolder(ctx context.Context, r client.Reader, v *virtv1.VirtualMachineInstance, migration types.UID) (string, error) {
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(v.Namespace), client.MatchingLabels{virtv1.CreatedByLabel: string(v.UID)}); err != nil {
		return "", err
	}
	want := migration
	if want == "" {
		want = v.UID
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if vmictl.RoleOf(v, p) == want && p.Spec.NodeName != "" {
			return vmictl.PodFolder(c.PodsDir(p.Spec.NodeName), p), nil
		}
	}
	return "", fmt.Errorf("VMI %s/%s: no launcher pod of %q bound to a node among %d", v.Namespace, v.Name, migration, len(pods.Items))
}

package contract

import (
	"path/filepath"

	"k8s.io/apimachinery/pkg/types"
)

// Folders on a node and in a launcher pod. A launcher pod's folder is an
// emptyDir volume (RunVolume): the kubelet makes it, world-writable, for
// the pod alone and removes it with the pod, and the node's handler finds
// it in the kubelet's pods folder by the pod's UID (PodFolder).
const (
	// PodsDir is the kubelet's folder of pods on a node (its --root-dir's
	// pods), where each pod's volumes live.
	PodsDir = "/var/lib/kubelet/pods"
	// PodRunDir is where a launcher pod sees its folder: PodRunDir/<vmi uid>.
	PodRunDir = "/var/run/virtkit"
	// RunVolume names the launcher pod's emptyDir volume that is its folder.
	RunVolume = "virtkit-run"
	// HandlerStateDir is the node folder of the handler's own records of
	// the guests it started; launcher pods never see it.
	HandlerStateDir = "/var/run/virtkit/handler"
)

// EmptyDir is the node folder of the emptyDir volume named volume of the
// pod whose UID is pod, under podsDir (PodsDir on a kubelet's node): the
// kubelet's layout, which local nodes follow too.
func EmptyDir(podsDir string, pod types.UID, volume string) string {
	return filepath.Join(podsDir, string(pod), "volumes", "kubernetes.io~empty-dir", volume)
}

// PodFolder is the node folder of the launcher pod whose UID is pod: its
// RunVolume under podsDir.
func PodFolder(podsDir string, pod types.UID) string { return EmptyDir(podsDir, pod, RunVolume) }

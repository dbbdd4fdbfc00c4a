package contract

// Folders on a node. The handler and launcher pods find each other through
// them, and the handler's DaemonSet mounts them at the same paths, so that
// a path the handler writes is the node's path.
const (
	// HostRunDir is the node folder that holds each launcher's folder,
	// HostRunDir/<vmi uid> (or <migration uid> for a migration's target),
	// a hostPath volume of the launcher pod.
	HostRunDir = "/var/run/virtkit/pods"
	// PodRunDir is where a launcher pod sees its folder: PodRunDir/<vmi uid>.
	PodRunDir = "/var/run/virtkit"
	// HandlerStateDir is the node folder of the handler's own records of
	// the guests it started; launcher pods never see it.
	HandlerStateDir = "/var/run/virtkit/handler"
)

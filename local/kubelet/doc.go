// Package kubelet runs a real Kubernetes node next to a local control plane
// (local/controlplane): containerd 2.x with runc and the CNI plugins, and a
// kubelet that registers the node and runs its pods as real containers from
// OCI images, pulled from a plain-HTTP registry such as virt-local's.
//
// [Start] records what the node changes on the host ([HostState]: the
// kubelet's sysctls, its iptables chains, the fixed paths it creates, the
// network namespaces containerd creates for pods) into the node's folder
// before it starts anything, then starts containerd and the kubelet and
// waits for the Node to be Ready. [Node.Stop] deletes the node's pods and
// waits for the kubelet to tear them down, stops the kubelet and
// containerd, removes what is left (containers, mounts, cgroups) and
// restores the recorded host state; [Cleanup] does the same from the
// record alone, after a crash.
//
// The kubelet reaches the apiserver with a client certificate of its own
// (system:node:NAME, authorized by the Node authorizer) and authenticates
// and authorizes its own API through the apiserver (webhook mode, no
// anonymous access); the apiserver reaches the kubelet at the node's
// InternalIP with its kubelet client certificate.
//
// The package owns Config.Dir. It needs root, cgroup v1 or v2 without
// systemd as the cgroup driver (cgroupfs), and runc.
package kubelet

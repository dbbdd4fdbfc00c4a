// Package node makes this machine a Kubernetes node whose pods run as host
// processes: a github.com/virtual-kubelet/virtual-kubelet provider that
// registers a Node (capacity from the host, the kubevirt.io/schedulable=true
// label launcher pods select, Ready, lease heartbeats), and runs each pod
// bound to it:
//
//   - every container's command is a host binary, looked up in Config.BinDirs
//     first and then in PATH; container images are not pulled for it;
//   - the pod's processes run in their own network namespace, connected by the
//     standard CNI plugins (bridge with masquerade, host-local IPAM, loopback;
//     `make cni-bins`), and in their own mount namespace: the host's file
//     system with the pod's volumes bind-mounted at their mountPaths;
//   - a container runs as its security context (the container's, else the
//     pod's) says: runAsUser and runAsGroup, the pod's supplementalGroups and
//     fsGroup (which also owns its emptyDirs), no_new_privs when
//     allowPrivilegeEscalation is false, runAsNonRoot enforced; a user or
//     group the host's /etc/passwd or /etc/group lacks gets a line in the
//     container's view of them, as an image would bring. A container that
//     runs as root keeps every capability: capabilities, seccomp and
//     privileged are not applied;
//   - volumes are host folders: hostPath, emptyDir, configMap, secret,
//     downwardAPI and projected (files written from the API), PVCs bound to
//     hostPath or local PersistentVolumes, and image volumes through an
//     [ImageStore];
//   - status follows the processes: Pending, Running with readiness probes,
//     Succeeded or Failed with exit codes and termination messages;
//   - deleting a pod ends its processes (SIGTERM, grace period, SIGKILL) and
//     removes its network, mounts and folders.
//
// Every effect goes through a small interface with a fake in
// local/node/nodefake: [ProcessRunner] (the host implementation re-executes
// the running program as a small helper that builds the pod's mount view
// and executes the command), [Network] ([CNI]) and [ImageStore]
// ([RegistryImageStore], which pulls image volumes' images from one
// registry, virt-local's local/registry on loopback, and unpacks them under
// Config.ImageDir).
//
// The package owns the Node object, the pods bound to it and everything under
// Config.StateDir. It does not schedule, pull containers' images (only
// image volumes') or run anything KubeVirt-specific: launcher pods are pods
// like any other. See docs/sdk/local-node.md.
package node

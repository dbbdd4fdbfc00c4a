// Package cluster is virt-local as a library: a real single-machine
// Kubernetes (local/controlplane) with virtkit installed and running in
// this process. [Up] starts an OCI registry on loopback (local/registry:
// images for image volumes, such as containerDisks, are pushed there and
// kept in the data directory), the control plane, installs the kubevirt.io
// CRDs, the KubeVirt CR (software emulation) and the objects that make the
// apiserver call virt-api, starts the storage (the CSI driver of
// local/csidriver behind the default StorageClass and VolumeSnapshotClass,
// with the upstream external-provisioner, external-resizer,
// csi-snapshotter and snapshot-controller as processes; the VolumeSnapshot
// CRDs installed first), then serves virt-api (webhooks and the
// subresources API), runs the VM and VMI controllers, and runs, per local
// node, a node that runs launcher pods as host processes (local/node),
// pulling image volumes from the registry and publishing CSI volumes as a
// kubelet does, and that node's handler
// (controllers/handler). Each node gets a host bridge and a pod range of
// its own, distinct from every other range on the machine (other
// virt-locals included; Cluster.NodeNetworks); the host routes between the
// bridges, so several nodes make live migration testable on one machine. It serves every component's Prometheus series,
// with controller-runtime's, on Config.MetricsAddr ([Cluster.MetricsAddr],
// docs/metrics.md). [Cluster.Down] stops it all, guests first,
// gracefully.
//
// With Config.Split, virt-api, virt-controller and each local node's
// handler run instead as processes of their own, from the built daemons,
// each restarted when it exits as a kubelet restarts a container
// ([Cluster.Daemons] tells their PIDs), so that a test can kill one alone;
// the chaos suite of test/e2e does.
//
// With Config.Operator (and Config.KubeletNode), it installs nothing of
// virtkit and starts no local node: it pushes the built images and writes
// virt-operator's release manifest and a KubeVirt CR for the cluster
// ([Cluster.OperatorManifests]), which install virtkit on the real node
// once applied, as on any cluster.
//
// It owns the order of that start and stop and where each part keeps its
// state under Config.DataDir. It does not link libvirt: the handlers'
// libvirt connector is given (daemons/virt-local passes
// virt/domain/libvirt's), so the package builds without cgo.
package cluster

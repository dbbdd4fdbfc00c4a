// Package csidriver is virt-local's storage: a Container Storage Interface
// (CSI) driver that backs each volume with a folder (or, for a Block
// volume, a sparse file) under one root on the machine, and each snapshot
// with a copy of it.
//
// It serves the three CSI services over one Unix socket ([Serve]):
//   - Identity: the driver's name ([Name]), its capabilities and a probe;
//   - Controller: CreateVolume empty, from a snapshot or from another
//     volume (a clone); DeleteVolume; CreateSnapshot, DeleteSnapshot and
//     ListSnapshots; ControllerExpandVolume; ValidateVolumeCapabilities;
//   - Node: NodePublishVolume bind-mounts a volume's folder (or a loop
//     device over its file) at the target path the container orchestrator
//     names, NodeUnpublishVolume undoes it; NodeGetInfo, NodeGetVolumeStats.
//
// The upstream Kubernetes components call it: external-provisioner,
// external-snapshotter's csi-snapshotter and snapshot-controller, and
// external-resizer (virt-local runs them next to it), and a node's kubelet
// or virt-local's local node, which publish volumes into pods.
//
// Copies (snapshots, volumes made from them, clones) are reflinks where the
// file system shares extents and sparse copies otherwise; a volume or a
// snapshot appears whole or not at all: each is made in a scratch folder and
// renamed into place. Everything in a volume was written by a pod and is
// treated as hostile: copies walk it through file descriptors without
// following a symbolic link, and only folders, regular files, symbolic links
// (as links) and FIFOs are copied.
//
// Every node of a virt-local runs on the same machine, so every node
// reaches every volume: volumes carry no topology, and ReadWriteMany is
// honest (live migration needs it). A folder's capacity is recorded, not
// enforced; a Block volume's file has its capacity's size.
//
// Effects sit behind two interfaces: [Mounter] (bind mounts and loop
// devices; [HostMounter] on Linux, fake.Mounter for tests) and the file
// system under the root. The same contract suite (kubernetes-csi's sanity
// suite) runs against the driver with either mounter.
package csidriver

// Package provisioner gives virt-local's PersistentVolumeClaims their
// storage: a dynamic provisioner that backs each claim of its StorageClass
// with a folder of its own under one root, published as a hostPath
// PersistentVolume.
//
// It owns three things:
//   - [Folders], the provisioner proper (sigs.k8s.io/sig-storage-lib-external-provisioner's
//     Provisioner): Provision makes the folder and describes the volume,
//     Delete removes the folder of a volume the reclaim policy lets go;
//   - [Run], the controller that watches claims and volumes and calls it;
//   - [StorageClass], the class virt-local installs (the default class).
//
// Every local node of a virt-local runs on the same machine, so a folder is
// reachable from every node: the volumes carry no node affinity, and
// ReadWriteMany claims are honest (which live migration needs). Capacity is
// recorded, not enforced: a folder can hold more than its claim asked for.
// virt-handler sizes a claim's disk.img from the claim's capacity.
//
// Block volumes, label selectors and data sources (cloning) are refused with
// an error naming the claim's field; the controller turns it into a
// ProvisioningFailed event on the claim.
package provisioner

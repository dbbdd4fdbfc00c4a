// Package export is the controller of KubeVirt's VirtualMachineExport
// (export.kubevirt.io/v1beta1): for an export of a claim or of a stopped
// VM it makes, as KubeVirt's export controller does, a Service, a token
// Secret (unless the export names one), a serving certificate signed by
// the export CA, and an export server pod (virt-exportserver, the library
// virt/storage/export) mounting the claims read-only; it keeps the
// export's status (phases Pending, Ready, Skipped, Terminated; conditions
// Ready and PVCReady with KubeVirt's reasons; links; the TTL) and deletes
// the export when its TTL has passed. Everything it makes is owned by the
// export, so deleting the export removes it.
//
// A claim in use by another pod, or a VM that runs, pauses the export:
// its server pod is deleted and the export waits (reason InUse). A missing
// VM, or one without claims, skips it.
//
// It reads and writes the API through a controller-runtime client and
// signs certificates through a Signer; it touches no node. See
// docs/export.md.
package export

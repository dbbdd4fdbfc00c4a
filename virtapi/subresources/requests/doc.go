// Package requests reads the requests of the subresources.kubevirt.io
// verbs as KubeVirt's virt-api does: the options body of each verb (JSON
// or YAML, bounded to [MaxBody] bytes, an empty body meaning defaults), the
// dryRun rule (only "All"), and addvolume/removevolume, checked and applied
// to a VMI spec in KubeVirt's words. Every refusal is a 400 Bad Request
// (apierrors.IsBadRequest) whose message virtctl shows.
//
// The package is pure: it links no Kubernetes client, so that the server
// in the parent package stays the only place that writes, and the fuzz
// target of these decoders stays small.
package requests

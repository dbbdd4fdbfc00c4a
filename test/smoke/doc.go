// Package smoke holds the foundation's end-to-end checks: the test guest boots
// through a real private libvirtd under software emulation, and kubevirt.io
// objects round-trip through a real kube-apiserver with the project's CRDs.
// Only tests live here.
package smoke

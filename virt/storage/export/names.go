package export

import (
	"fmt"
	"hash/fnv"
	"strings"
)

// Labels and annotations of what an export makes, as KubeVirt sets them.
const (
	// AppLabel marks an export's Service (value [AppLabelValue]).
	AppLabel = "kubevirt.io"
	// AppLabelValue is AppLabel's value on an export's Service.
	AppLabelValue = "virt-exporter"
	// ServiceSelectorLabel is on the export's server pod, with the value
	// [SelectorValue]; the export's Service selects it.
	ServiceSelectorLabel = "kubevirt.io.virt-export-service"
)

// Ports of an export's server: the pod listens on ServerPort, its Service
// serves ServicePort.
const (
	ServerPort  = 8443
	ServicePort = 443
	// PortName is the Service port's name.
	PortName = "export"
)

// maxName is the longest name of the objects an export makes: a label
// value and a DNS label.
const maxName = 63

// PodName is the name of export's server pod: virt-export-<export>, or a
// hash of it when that is longer than 63 characters.
func PodName(export string) string { return derived("virt-export", export) }

// ServiceName is the name of export's Service: PodName with the dots of a
// export's name turned into dashes (a Service name is a DNS label).
func ServiceName(export string) string {
	return derived("virt-export", strings.ReplaceAll(export, ".", "-"))
}

// SelectorValue is [ServiceSelectorLabel]'s value for export.
func SelectorValue(export string) string { return PodName(export) }

// TokenSecretName is the Secret the controller creates for export's token
// when its spec names none: export-token-<export>.
func TokenSecretName(export string) string { return derived("export-token", export) }

// CertSecretName is the Secret holding the server certificate of export's
// server pod (keys tls.crt and tls.key).
func CertSecretName(export string) string { return derived("export-cert", export) }

// ClaimName is the claim an export of a VM snapshot restores a backed-up
// claim into: <export>-<claim>, as KubeVirt names it.
func ClaimName(export, claim string) string { return export + "-" + claim }

// derived joins prefix and name with a dash, or, when that is longer than
// 63 characters, keeps prefix and adds the FNV-32a hash of the joined
// name, as KubeVirt's controllers name these objects.
func derived(prefix, name string) string {
	full := prefix + "-" + name
	if len(full) <= maxName {
		return full
	}
	h := fnv.New32a()
	h.Write([]byte(full))
	return fmt.Sprintf("%s-%08x", prefix, h.Sum32())
}

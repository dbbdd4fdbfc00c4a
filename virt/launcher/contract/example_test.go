package contract_test

import (
	"fmt"
	"path"

	"github.com/virtkit/virtkit/virt/launcher/contract"
)

// A launcher pod's command and readiness probe, as a controller renders
// them without importing virt/launcher.
func Example() {
	dir := "/var/run/virtkit/0f6e"
	fmt.Println(contract.Binary, "--"+contract.FlagDir, dir, "--"+contract.FlagNamespace, "default", "--"+contract.FlagName, "vm1")
	fmt.Println("test", "-f", path.Join(dir, contract.ReadyFile))
	// Output:
	// virt-launcher --dir /var/run/virtkit/0f6e --namespace default --name vm1
	// test -f /var/run/virtkit/0f6e/ready
}

package netns

import "fmt"

// setupErr names the interface (and the object) a setup step failed on.
func setupErr(iface, object string, err error) error {
	return fmt.Errorf("network: interface %q: %s: %w", iface, object, err)
}

package stale_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit/controllers/stale"
)

// A reconciler records each status write; a reconcile that then reads the
// old version from its cache waits for the watch event instead of acting.
func Example() {
	var versions stale.Guard
	key := types.NamespacedName{Namespace: "default", Name: "vm1"}

	// The status update moved the VM from resourceVersion 41 to 42.
	versions.Replaced(key, "41", "42")

	fmt.Println(versions.Stale(key, "41")) // the cache lags: requeue after stale.RetryAfter
	fmt.Println(versions.Stale(key, "42")) // caught up: reconcile
	// Output:
	// true
	// false
}

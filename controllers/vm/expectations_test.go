package vm

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestExpectations(t *testing.T) {
	var e expectations
	key := types.NamespacedName{Namespace: "ns", Name: "vm1"}
	e.vmWritten(key, "1", "2")
	e.vmWritten(key, "2", "3")
	for _, rv := range []string{"1", "2"} {
		if !e.vmStale(key, rv) {
			t.Errorf("version %s after our writes to 3: not stale", rv)
		}
	}
	if e.vmStale(key, "3") {
		t.Error("our own last version is stale")
	}
	if e.vmStale(key, "1") {
		t.Error("stale versions kept after the cache caught up")
	}
	e.vmWritten(key, "4", "4") // a no-op write
	if e.vmStale(key, "4") {
		t.Error("a no-op write made its version stale")
	}

	e.vmiDeleted(key, "a")
	if !e.deletedVMI(key, "a") {
		t.Error("deleted VMI a not remembered")
	}
	if e.deletedVMI(key, "b") || e.deletedVMI(key, "a") {
		t.Error("a VMI of another UID did not clear the memory of a")
	}
	e.forget(key)
	if len(e.m) != 0 {
		t.Errorf("forget left %v", e.m)
	}
}

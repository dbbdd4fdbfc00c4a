package vm

import (
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// expectations remembers, per VM, what this controller wrote that its cache
// may not show yet, so that a reconcile on a stale cache neither repeats a
// write nor fails on a conflict (each costs the apiserver a request).
type expectations struct {
	mu sync.Mutex
	m  map[types.NamespacedName]*expected
}

type expected struct {
	// staleRVs are VM resourceVersions that this controller's own writes
	// replaced: a cached VM at one of them is out of date.
	staleRVs []string
	// deletedVMI is the VMI this controller deleted last.
	deletedVMI types.UID
}

func (e *expectations) get(key types.NamespacedName) *expected {
	if e.m == nil {
		e.m = map[types.NamespacedName]*expected{}
	}
	x := e.m[key]
	if x == nil {
		x = &expected{}
		e.m[key] = x
	}
	return x
}

// vmWritten records that a write replaced the VM at resourceVersion old
// with version cur. A write the apiserver found to change nothing keeps the
// version, which then is not stale.
func (e *expectations) vmWritten(key types.NamespacedName, old, cur string) {
	if old == cur {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	x := e.get(key)
	x.staleRVs = append(x.staleRVs, old)
}

// vmStale reports whether a cached VM at rv is older than this controller's
// last write. Seeing any other version means the cache caught up.
func (e *expectations) vmStale(key types.NamespacedName, rv string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := e.get(key)
	if slices.Contains(x.staleRVs, rv) {
		return true
	}
	x.staleRVs = nil
	return false
}

// vmiDeleted records that this controller deleted the VMI uid.
func (e *expectations) vmiDeleted(key types.NamespacedName, uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.get(key).deletedVMI = uid
}

// deletedVMI reports whether the cached VMI uid is one this controller
// deleted after the cache last saw it.
func (e *expectations) deletedVMI(key types.NamespacedName, uid types.UID) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := e.get(key)
	if x.deletedVMI != "" && x.deletedVMI != uid {
		x.deletedVMI = ""
	}
	return uid != "" && x.deletedVMI == uid
}

// forget drops what is remembered about a VM that is gone.
func (e *expectations) forget(key types.NamespacedName) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, key)
}

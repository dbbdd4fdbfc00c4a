package stale

import (
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// RetryAfter is how soon a reconcile that found its cache stale, or lost a
// write on a conflict with a newer version, runs again.
const RetryAfter = 200 * time.Millisecond

// Guard remembers, per object key, the versions of the object that this
// controller's own writes replaced. A version is what tells one state of
// the object from the next: its resourceVersion after an update or patch,
// its UID after a delete (the object itself is what the delete replaced).
//
// The behaviour, in full: Replaced(key, old, cur) records old when cur
// differs from it; Stale(key, v) is true while v is a recorded version of
// key, and the first call with any other version (the cache caught up, or
// someone else wrote a newer version) drops what key had recorded; Forget
// drops it at once (the object is gone).
//
// The zero Guard is ready to use. A Guard is safe for concurrent use; it
// must not be copied after first use.
type Guard struct {
	mu       sync.Mutex
	replaced map[types.NamespacedName][]string
}

// Replaced records that a write of this controller replaced the object key
// at version old with version cur. A write the apiserver found to change
// nothing keeps the version (cur == old): nothing is recorded, as that
// version is current.
func (g *Guard) Replaced(key types.NamespacedName, old, cur string) {
	if old == cur || old == "" {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.replaced == nil {
		g.replaced = map[types.NamespacedName][]string{}
	}
	if !slices.Contains(g.replaced[key], old) {
		g.replaced[key] = append(g.replaced[key], old)
	}
}

// Stale reports whether the object key, as read from the cache at version
// v, is older than this controller's own last write of it. Any version
// that is not recorded means the cache caught up: the record goes.
func (g *Guard) Stale(key types.NamespacedName, v string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if v != "" && slices.Contains(g.replaced[key], v) {
		return true
	}
	delete(g.replaced, key)
	return false
}

// Forget drops what is recorded about key, whose object is gone.
func (g *Guard) Forget(key types.NamespacedName) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.replaced, key)
}

// Len is the number of objects with a record, for tests and metrics.
func (g *Guard) Len() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.replaced)
}

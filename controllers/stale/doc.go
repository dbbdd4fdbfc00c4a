// Package stale is the one guard the reconcilers under controllers/ keep
// against acting on a cache that does not show their own last write yet.
//
// A controller reads objects from its manager's cache and writes them to
// the apiserver; the cache sees the write a little later, through its watch.
// A reconcile that runs in between (another event of the same object, a
// requeue) reads the object as it was before the write, and would repeat
// the write or fail on a conflict, each a request the apiserver pays for.
// Guard remembers, per object, the versions its controller's own writes
// replaced; a reconcile that finds its object at one of them waits
// RetryAfter instead of acting, and the watch event of the write follows.
//
// The package holds no state of its own and makes no requests: every
// reconciler owns one Guard per kind of object it writes.
package stale

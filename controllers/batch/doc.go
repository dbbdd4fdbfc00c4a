// Package batch holds how the controllers of replicas (replica sets,
// pools) send many similar requests at once: SlowStart. It keeps no state
// and makes no requests of its own.
package batch

// Package nodefake has in-memory fakes of local/node's effects, for unit
// tests of the node's decisions and for integrators: [Runner] (a
// ProcessRunner whose processes the test ends), [Network] (addresses
// without namespaces) and [Images] (an ImageStore over a map).
//
// The fakes do not run anything: a process's mounts are only recorded, its
// Root is an empty folder the test may fill (for `test -f` probes). The
// integration tests of local/node run the real HostRunner and CNI.
package nodefake

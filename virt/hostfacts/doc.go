// Package hostfacts reads what the domain converter needs to know about
// the node and a launcher pod's share of it (virt/domain's Host): the CPUs
// the pod may run on, which the kubelet's static CPU manager makes
// exclusive to a pod with dedicated CPUs; the node's NUMA cells; and the
// hugepage sizes the node has.
//
// It reads procfs and sysfs through an fs.FS rooted at the node's "/"
// (os.DirFS("/") on the node; fstest.MapFS in tests), so it builds on every
// GOOS, needs no cgo and runs the same on a fake tree. A file that is
// missing is a fact that is unknown (a kernel without NUMA, a process that
// has exited), not an error; a file that says something it cannot parse is
// an error naming the file. Reads are bounded.
package hostfacts

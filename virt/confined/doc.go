// Package confined opens files, folders and unix sockets below a folder
// that someone less trusted than the caller can write: a launcher folder
// that the launcher pod shares with the node, or a pod's root file system
// seen from the node (/proc/PID/root). A node daemon that opened such paths
// as plain paths would follow a link the pod planted (serial0 pointing at
// the container runtime's socket, exit pointing at /dev/zero, a folder
// swapped for a link to /etc) and act on the node's files as root.
//
// A Root is an open handle on the folder. Every name given to its methods
// is resolved by the kernel relative to that handle, in one step, with
// openat2(2):
//
//   - in NoSymlinks mode (launcher folders) no component may be a symbolic
//     link, and no name may leave the folder;
//   - in InRoot mode (pod roots) symbolic links are followed as a process
//     whose root is the folder sees them: an absolute link starts again at
//     the folder and ".." stops at it, so /var/run -> /run works as in the
//     pod and nothing resolves outside it. Magic links (/proc/self/...)
//     are never followed.
//
// On top of that resolution: DialUnix and SocketPath connect only to a
// socket; ReadFile reads only a regular file, checked before it is opened
// for reading (a FIFO or a device is never opened), and never more than a
// limit; RemoveAll never follows a link out of the tree it removes.
//
// There is no fallback to the unresolved path: a kernel without openat2
// (before Linux 5.6) gets an error. On other systems the package builds on
// os.Root (links are followed only within the folder, and absolute links
// are refused) and sockets are not supported.
package confined

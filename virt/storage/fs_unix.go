//go:build unix

package storage

import "syscall"

// nonBlock opens a FIFO without waiting for a writer (it is then refused
// for not being a regular file or a device).
const nonBlock = syscall.O_NONBLOCK

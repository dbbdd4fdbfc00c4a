//go:build unix

package importer

import "syscall"

// oNoFollow makes opening a symbolic link fail: the Lstat check before an
// open cannot see a link put there in between.
const oNoFollow = syscall.O_NOFOLLOW

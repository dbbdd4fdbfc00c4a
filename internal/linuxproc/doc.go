// Package linuxproc reads Linux process facts from /proc: which processes
// live in a given mount namespace, which carry a given environment marker or
// see a given mount. Callers use it to make sure that nothing they started is
// left running. It only reads; it never signals or changes a process.
package linuxproc

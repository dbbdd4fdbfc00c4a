// Command pause is the sandbox process of a Kubernetes pod: the first process
// of the pod's sandbox image, which holds the pod's namespaces open. It does
// nothing but reap the children it inherits (as PID 1 of a shared PID
// namespace it adopts orphans) and exits 0 on SIGTERM or SIGINT; the line it
// prints once it catches them tells a caller it is ready. It is static
// (CGO_ENABLED=0), so an image of this one file is enough.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	fmt.Println("pause: waiting for SIGTERM or SIGINT")
	for sig := range sigs {
		if sig == syscall.SIGCHLD {
			reap()
			continue
		}
		fmt.Fprintf(os.Stderr, "pause: %v: exiting\n", sig)
		os.Exit(0)
	}
}

// reap waits for every child that has exited, without blocking: signals
// coalesce, so one SIGCHLD may stand for several children.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if pid <= 0 || err != nil {
			return
		}
	}
}

// Command virtctl controls virtual machines through the
// subresources.kubevirt.io API, speaking the wire of KubeVirt's virtctl: the
// same commands, flags, requests and success lines, so it works against
// virtkit and KubeVirt alike, and KubeVirt's virtctl works against virtkit.
//
//	virtctl [options] COMMAND [flags] ARGS
//	virtctl start tiny
//	virtctl console tiny            # Ctrl+] leaves
//	virtctl create vm --name=x ... | kubectl apply -f -
//
// It finds the cluster as kubectl does (--kubeconfig, $KUBECONFIG,
// ~/.kube/config; -n, --context and kubectl's other connection options)
// and explains failures with what to do next: the RBAC to ask for, how to
// list what exists, the kubeconfig that pointed at an unreachable server.
// Each command group lives in its own file (vm.go, vmi.go, migrate.go,
// volumes.go, console.go, vnc.go, portforward.go, ssh.go, expose.go, create.go,
// version.go); app.go parses the
// command line, session.go connects, explain.go words the errors. See
// docs/virtctl.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

func main() {
	// controller-runtime's client logs nothing virtctl's user needs.
	logf.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], defaultDeps())
	stop()
	os.Exit(code)
}

// Command virt-exportserver is the entry point of a VirtualMachineExport's
// server pod: it serves the claims mounted in the pod, and the export's
// manifests, over HTTPS to clients holding the export's token, through
// the library virt/storage/export, until its deadline.
//
// Its configuration is the pod's environment, as export.Config.Env writes
// it (the export controller renders the pod). Exit status: 0 when it
// stopped at its deadline or on SIGTERM or SIGINT (letting downloads under
// way end within 10 seconds); 1 when it could not serve (a volume or the
// certificate could not be opened, the port was taken); 2 for a bad
// configuration.
package main

import (
	"context"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-logr/logr"

	"github.com/virtkit/virtkit/virt/storage/export"
)

func main() {
	log := logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := run(ctx, os.LookupEnv, log)
	stop()
	os.Exit(code)
}

// Exit codes.
const (
	exitDone   = 0
	exitFailed = 1
	exitConfig = 2
)

// grace is how long downloads under way may go on once the server stops.
const grace = 10 * time.Second

// run serves the export lookup configures until ctx ends or its deadline
// passes, and returns the exit code.
func run(ctx context.Context, lookup func(string) (string, bool), log logr.Logger) int {
	cfg, err := export.ConfigFromEnv(lookup)
	if err != nil {
		log.Error(err, "bad configuration")
		return exitConfig
	}
	log = log.WithValues("export", cfg.Export)
	srv, err := export.NewServer(cfg, export.WithLogger(log))
	if err != nil {
		log.Error(err, "cannot serve")
		return exitFailed
	}
	defer srv.Close()
	addr := cfg.Address()
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		log.Error(err, "cannot listen", "address", addr)
		return exitFailed
	}
	log.Info("serving", "address", ln.Addr().String(), "volumes", len(cfg.Volumes), "deadline", cfg.Deadline)
	if err := srv.Serve(ctx, ln, grace); err != nil {
		log.Error(err, "serving")
		return exitFailed
	}
	return exitDone
}

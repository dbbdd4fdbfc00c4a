// Command virt-importer is the entry point of a DataVolume's importer pod:
// it fills the claim mounted in the pod with a disk image, through the
// library virt/storage/importer, and leaves its outcome as the container's
// termination message.
//
//	virt-importer --source http --url https://host/disk.qcow2 --target /data/disk.img --size 1073741824 --scratch /scratch
//
// The flags, mounts, credentials' environment and termination message are
// the contract of virt/storage/importer/contract, which the DataVolume
// controller (controllers/datavolume) renders. Exit status: 0 when the
// import succeeded, failed for good, or needs scratch space it was not
// given (the outcome says which); 1 when it
// failed in a way a retry may mend (the source could not be reached), so
// that the kubelet restarts it with its back-off; 2 for bad flags.
// SIGTERM or SIGINT stops it; a partly written disk is removed.
package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/go-logr/logr"

	"github.com/virtkit/virtkit/virt/storage/importer"
	"github.com/virtkit/virtkit/virt/storage/importer/contract"
)

func main() {
	log := logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := run(ctx, os.Args[1:], os.Getenv, log)
	stop()
	os.Exit(code)
}

// Exit codes.
const (
	exitDone  = 0
	exitRetry = 1
	exitUsage = 2
)

// run imports (or, for an upload source, serves the upload server and
// imports the upload; or sends a clone's source to its target) as args say and returns the exit code; getenv gives the
// credentials' variables.
func run(ctx context.Context, args []string, getenv func(string) string, log logr.Logger) int {
	a, err := contract.Parse(args, io.Discard)
	if err != nil {
		writeOutcome(log, contract.Outcome{Message: "bad importer flags: " + err.Error(), Reason: "InvalidArguments", Fatal: true})
		return exitUsage
	}
	progress := newGauge(a.OwnerUID)
	stopServing := serveProgress(ctx, progress, log)
	defer stopServing()

	im := importer.New(importer.WithLogger(log), importer.WithProgress(progress.set), importer.WithXZ("xz"))
	var (
		out  contract.Outcome
		code int
	)
	switch a.Source {
	case contract.SourceUpload:
		out, code = serveUpload(ctx, im, a, contract.UploadTLSDir, log)
	case contract.SourceSend:
		out, code = sendOnce(ctx, a, contract.CloneTLSDir, log)
	default:
		out, code = importOnce(ctx, im, a, getenv)
	}
	writeOutcome(log, out)
	return code
}

// importOnce runs one import and says how it ended.
func importOnce(ctx context.Context, im importer.Interface, a contract.Args, getenv func(string) string) (contract.Outcome, int) {
	dst := target(a)
	if a.Source == contract.SourceBlank {
		if err := im.Blank(ctx, dst); err != nil {
			return failure(err)
		}
		return contract.Outcome{Message: "Import Complete", Format: "raw", VirtualSize: a.Size, PreallocationApplied: preallocated(a)}, exitDone
	}
	var (
		from importer.Source = importer.FileSource{Path: a.Path, Name: a.Name}
		err  error
	)
	switch a.Source {
	case contract.SourceHTTP:
		from, err = httpSource(a, getenv)
	case contract.SourceRegistry:
		from, err = registrySource(a, getenv)
	}
	if err != nil {
		return contract.Outcome{Message: err.Error(), Reason: "InvalidSource", Fatal: true}, exitDone
	}
	var sum *importer.ChecksumSource
	if a.Checksum != "" {
		if sum, err = importer.NewChecksumSource(from, a.Checksum); err != nil {
			return contract.Outcome{Message: err.Error(), Reason: "InvalidSource", Fatal: true}, exitDone
		}
		from = sum
	}
	res, err := im.Import(ctx, from, dst)
	if err == nil && sum != nil {
		if err = sum.Verify(); err != nil && !a.Block {
			// The disk holds bytes nobody vouched for.
			_ = os.Remove(a.Target)
		}
	}
	if importer.ReasonOf(err) == importer.ReasonScratchRequired {
		// Nothing was written: the next pod has a scratch claim.
		return contract.Outcome{Message: err.Error(), Reason: contract.ReasonScratchRequired, ScratchRequired: true}, exitDone
	}
	if err != nil {
		return failure(err)
	}
	return contract.Outcome{Message: "Import Complete", Format: res.Format, Compression: res.Compression, VirtualSize: res.VirtualSize,
		PreallocationApplied: preallocated(a)}, exitDone
}

// target is the disk a's import writes.
func target(a contract.Args) importer.Target {
	return importer.Target{Path: a.Target, Block: a.Block, Size: a.Size, ScratchDir: a.Scratch, NoScratch: a.Scratch == "",
		Preallocate: a.Preallocate, Archive: a.Archive}
}

// preallocated says whether a's import, once done, allocated its disk.
func preallocated(a contract.Args) bool { return a.Preallocate && !a.Block && !a.Archive }

// failure turns an import error into its outcome: retried when the
// library says a retry may help, final otherwise.
func failure(err error) (contract.Outcome, int) {
	out := contract.Outcome{Message: err.Error(), Reason: string(importer.ReasonOf(err))}
	if out.Reason == "" {
		out.Reason = "ImportFailed"
	}
	if importer.IsRetryable(err) || errors.Is(err, context.Canceled) {
		return out, exitRetry
	}
	out.Fatal = true
	return out, exitDone
}

// writeOutcome leaves out as the termination message; without the file
// (run by hand) it is logged only.
func writeOutcome(log logr.Logger, out contract.Outcome) {
	log.Info("import ended", "message", out.Message, "reason", out.Reason, "fatal", out.Fatal)
	f, err := os.OpenFile(contract.TerminationMessagePath, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return
	}
	defer f.Close()
	if _, err := f.Write(out.Marshal()); err != nil {
		log.Error(err, "writing the termination message")
	}
}

// serveProgress serves the progress metric on contract.ProgressPort until
// the returned function is called.
func serveProgress(ctx context.Context, g *gauge, log logr.Logger) func() {
	l, err := net.Listen("tcp", ":"+strconv.Itoa(contract.ProgressPort))
	if err != nil {
		log.Error(err, "progress not served")
		return func() {}
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", g)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}
}

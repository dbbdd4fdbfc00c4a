package migrate

import (
	"context"
	"errors"
	"fmt"
	"time"

	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/domain"
)

// Run migrates the running domain name live from src to dest as cfg says
// and watches it until it ends. It returns when the domain runs on the
// destination (nil error), or with an *Error whose Reason says why not.
//
// What it does, in order:
//
//   - starts a peer-to-peer live migration (src.Migrate) in pre-copy, with
//     cfg's bandwidth limit, auto-converge when allowed, post-copy enabled
//     when cfg allows post-copy and workload disruption, the destination
//     made persistent and the source undefined once done;
//   - every poll interval, reads the progress (src.JobStats), reports it
//     (WithProgress), and checks two limits: the completion timeout
//     (cfg.CompletionTimeout of the data size) and the progress timeout
//     (cfg.ProgressTimeout without the remaining data shrinking);
//   - when a limit passes: switches to post-copy if cfg allows it; on the
//     completion timeout, with workload disruption but no post-copy
//     allowed, pauses the guest instead and gives it the same time again;
//     otherwise aborts (ErrCompletionTimeout or ErrStalled);
//   - when ctx ends during pre-copy, aborts (ErrCancelled). A post-copy
//     migration cannot be aborted without losing the guest, so then Run
//     waits for its end whatever ctx says;
//   - after an abort or a failure in pre-copy, the guest runs on the source
//     as before: Run resumes it if it paused it, and with dest.Host removes
//     what the destination kept.
//
// A migration that completes while Run aborts it counts as completed. The
// Result describes the migration in either case.
func Run(ctx context.Context, src Host, name string, dest Destination, cfg Config, opts ...Option) (Result, error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	switch {
	case src == nil:
		return Result{Domain: name}, errors.New("migrate: no source Host")
	case name == "":
		return Result{}, errors.New("migrate: domain name: required")
	case dest.URI == "":
		return Result{Domain: name}, fmt.Errorf("migrate domain %q: Destination.URI: required", name)
	}
	r := &run{o: o, src: src, name: name, dest: dest, cfg: cfg, mode: virtv1.MigrationPreCopy}
	return r.run(ctx)
}

// run is the state of one Run.
type run struct {
	o      options
	src    Host
	name   string
	dest   Destination
	cfg    Config
	params domain.MigrateParams

	start        time.Time
	mode         virtv1.MigrationMode
	completion   time.Duration // zero: none
	sized        bool          // completion is known
	lastProgress time.Time     // when the remaining data last shrank
	watermark    uint64        // the remaining data at the last poll
	polled       bool          // a poll saw the running job
	last         *domain.JobStats

	pausedByUs      bool // Run paused the guest and must resume it on abort
	postCopyRefused bool // StartPostCopy failed: do not try again
	targetExisted   bool // the destination had the domain before Run
	cleanedTarget   bool
	end             time.Duration // the migration's duration, once it ended
}

func (r *run) run(ctx context.Context) (Result, error) {
	clk := r.o.clock
	r.start = clk.Now()
	r.lastProgress = r.start
	if r.o.dataSize > 0 {
		r.completion, r.sized = r.cfg.CompletionTimeout(r.o.dataSize), true
	}
	if err := r.prepare(ctx); err != nil {
		return r.result(), &Error{Domain: r.name, Reason: ErrFailed, Mode: r.mode, Message: err.Error(), Err: err}
	}
	if r.dest.Host != nil {
		cctx, cancel := r.callCtx(ctx)
		_, _, err := r.dest.Host.State(cctx, r.name)
		cancel()
		r.targetExisted = err == nil
	}
	r.o.log.Info("migration starting", "domain", r.name, "destination", r.params.DestinationURI,
		"bandwidthMiB", r.params.BandwidthMiB, "autoConverge", r.params.AutoConverge, "postCopy", r.params.PostCopy,
		"copyStorage", r.params.CopyStorage.String(), "policy", r.cfg.Policy)

	// The migration is one blocking call that only its end, or AbortJob,
	// ends: it must not be cut short by ctx, which would leave it running
	// unwatched.
	errc := make(chan error, 1)
	go func() { errc <- r.src.Migrate(context.WithoutCancel(ctx), r.name, r.params) }()

	timer := clk.NewTimer(r.o.interval)
	defer timer.Stop()
	cancelled := ctx.Done()
	for {
		select {
		case err := <-errc:
			return r.finish(ctx, err)
		case <-cancelled:
			if r.mode == virtv1.MigrationPostCopy {
				r.o.log.Info("migration in post-copy cannot be cancelled; waiting for its end", "domain", r.name)
				cancelled = nil
				continue
			}
			return r.abort(ctx, errc, ErrCancelled, "cancelled by the caller", ctx.Err())
		case <-timer.C():
			if msg, reason := r.poll(ctx); reason != nil {
				return r.abort(ctx, errc, reason, msg, nil)
			}
			timer.Reset(r.o.interval)
		}
	}
}

// prepare makes the migration's parameters.
func (r *run) prepare(ctx context.Context) error {
	p := domain.MigrateParams{
		DestinationURI: r.dest.URI,
		MigrationURI:   r.dest.MigrationURI,
		ListenAddress:  r.dest.ListenAddress,
		DisksURI:       r.dest.DisksURI,
		BandwidthMiB:   r.cfg.BandwidthMiB(),
		AutoConverge:   r.cfg.AllowAutoConverge,
		PostCopy:       r.cfg.postCopyAllowed(),
		CopyStorage:    r.o.copyStorage,
		CopyDisks:      r.o.copyDisks,
		Persistent:     true,
		UndefineSource: true,
		Unsafe:         r.cfg.UnsafeMigrationOverride,
	}
	if r.dest.EditXML != nil {
		cctx, cancel := r.callCtx(ctx)
		doc, err := r.src.MigratableXML(cctx, r.name)
		cancel()
		if err != nil {
			return err
		}
		if err := r.dest.EditXML(doc); err != nil {
			return fmt.Errorf("Destination.EditXML: %w", err)
		}
		p.DestinationXML = doc
	}
	for _, edit := range r.o.edits {
		edit(&p)
	}
	r.params = p
	return nil
}

// callCtx bounds one hypervisor call; it outlives the caller's ctx, since
// cleaning up after a cancel needs calls too.
func (r *run) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), r.o.callTimeout)
}

// poll reads the progress, reports it and applies the limits. It returns
// the reason to abort, if any.
func (r *run) poll(ctx context.Context) (string, error) {
	cctx, cancel := r.callCtx(ctx)
	st, err := r.src.JobStats(cctx, r.name, domain.JobStatsOptions{})
	cancel()
	if err != nil {
		// Transient, or the migration just ended: Migrate's return says.
		r.o.log.V(1).Info("reading migration progress failed", "domain", r.name, "error", err.Error())
		return "", nil
	}
	if !st.Type.Active() {
		return "", nil // not started yet, or just ended
	}
	now := r.o.clock.Now()
	r.last = st
	if !r.sized && st.DataTotal > 0 {
		r.completion, r.sized = r.cfg.CompletionTimeout(int64(st.DataTotal)), true
	}
	if !r.polled || st.DataRemaining < r.watermark {
		r.lastProgress = now
	}
	r.polled, r.watermark = true, st.DataRemaining

	msg, reason := r.decide(ctx, now)
	if r.o.progress != nil {
		r.o.progress(Progress{
			Domain:            r.name,
			Mode:              r.mode,
			Elapsed:           now.Sub(r.start),
			CompletionTimeout: r.completion,
			SinceProgress:     now.Sub(r.lastProgress),
			Stats:             *st,
		})
	}
	return msg, reason
}

// decide applies the completion and progress timeouts.
func (r *run) decide(ctx context.Context, now time.Time) (string, error) {
	if r.mode == virtv1.MigrationPostCopy {
		// Nothing left to decide: post-copy cannot be aborted.
		return "", nil
	}
	elapsed := now.Sub(r.start)
	timedOut := r.completion > 0 && elapsed > r.completion
	stuck := now.Sub(r.lastProgress)
	stalled := r.cfg.ProgressTimeout > 0 && stuck > r.cfg.ProgressTimeout
	if !timedOut && !stalled {
		return "", nil
	}
	why := "completion timeout"
	if !timedOut {
		why = "progress timeout"
	}
	if r.mode == virtv1.MigrationPreCopy && r.cfg.postCopyAllowed() && !r.postCopyRefused && r.startPostCopy(ctx, why) {
		return "", nil
	}
	if timedOut && r.mode == virtv1.MigrationPreCopy && r.cfg.AllowWorkloadDisruption && !r.cfg.AllowPostCopy && r.pause(ctx) {
		return "", nil
	}
	if stalled {
		return fmt.Sprintf("no progress for %s (progress timeout %s)", round(stuck), r.cfg.ProgressTimeout), ErrStalled
	}
	return fmt.Sprintf("not completed after %s (completion timeout %s)", round(elapsed), r.completion), ErrCompletionTimeout
}

func (r *run) startPostCopy(ctx context.Context, why string) bool {
	cctx, cancel := r.callCtx(ctx)
	defer cancel()
	if err := r.src.StartPostCopy(cctx, r.name); err != nil {
		r.postCopyRefused = true
		r.o.log.Info("switching to post-copy failed", "domain", r.name, "error", err.Error())
		return false
	}
	r.mode = virtv1.MigrationPostCopy
	r.o.log.Info("migration switched to post-copy", "domain", r.name, "after", why)
	return true
}

// pause pauses the guest so that its memory stops changing, and gives the
// migration its completion time once more, as KubeVirt does.
func (r *run) pause(ctx context.Context) bool {
	cctx, cancel := r.callCtx(ctx)
	defer cancel()
	state, _, err := r.src.State(cctx, r.name)
	if err == nil && state != domain.StatePaused {
		err = r.src.Pause(cctx, r.name)
		r.pausedByUs = err == nil
	}
	if err != nil {
		r.o.log.Info("pausing the guest to complete the migration failed", "domain", r.name, "error", err.Error())
		return false
	}
	r.mode = virtv1.MigrationPaused
	r.completion *= 2
	r.o.log.Info("guest paused to complete the migration", "domain", r.name, "completionTimeout", r.completion)
	return true
}

// abort aborts the migration and waits for Migrate to return. AbortJob is
// repeated at each interval: a migration that has not started its job yet
// does not take it.
func (r *run) abort(ctx context.Context, errc <-chan error, reason error, msg string, cause error) (Result, error) {
	clk := r.o.clock
	r.o.log.Info("aborting migration", "domain", r.name, "reason", msg)
	deadline := clk.Now().Add(r.o.abortWait)
	for {
		cctx, cancel := r.callCtx(ctx)
		if err := r.src.AbortJob(cctx, r.name); err != nil {
			r.o.log.V(1).Info("abort refused", "domain", r.name, "error", err.Error())
		}
		cancel()
		t := clk.NewTimer(r.o.interval)
		select {
		case err := <-errc:
			t.Stop()
			if err == nil {
				r.o.log.Info("migration completed before the abort took effect", "domain", r.name)
				return r.finish(ctx, nil)
			}
			r.ended(clk.Now())
			r.recover(ctx)
			return r.result(), &Error{Domain: r.name, Reason: reason, Mode: r.mode, Message: msg, Err: errors.Join(cause, err)}
		case <-t.C():
			if !clk.Now().Before(deadline) {
				r.ended(clk.Now())
				return r.result(), &Error{Domain: r.name, Reason: reason, Mode: r.mode, Err: cause,
					Message: fmt.Sprintf("%s; the migration did not end within %s of aborting it", msg, r.o.abortWait)}
			}
		}
	}
}

// finish handles Migrate's return when Run did not abort.
func (r *run) finish(ctx context.Context, err error) (Result, error) {
	r.ended(r.o.clock.Now())
	if err != nil {
		if r.mode != virtv1.MigrationPostCopy {
			r.recover(ctx)
		}
		r.o.log.Info("migration failed", "domain", r.name, "mode", r.mode, "error", err.Error())
		return r.result(), &Error{Domain: r.name, Reason: ErrFailed, Mode: r.mode, Message: message(err), Err: err}
	}
	res := r.result()
	if r.dest.Host != nil {
		cctx, cancel := r.callCtx(ctx)
		st, err := r.dest.Host.JobStats(cctx, r.name, domain.JobStatsOptions{Completed: true})
		cancel()
		switch {
		case err != nil:
			r.o.log.V(1).Info("reading the completed migration's statistics failed", "domain", r.name, "error", err.Error())
		case st.Type == domain.JobCompleted:
			res.Stats = st
			res.Downtime = st.Downtime
			res.DataTotal, res.DataProcessed, res.Iterations = st.DataTotal, st.DataProcessed, st.Iteration
		}
	}
	r.o.log.Info("migration completed", "domain", r.name, "mode", r.mode, "duration", res.Duration, "downtime", res.Downtime)
	return res, nil
}

// ended records when the migration ended.
func (r *run) ended(at time.Time) { r.end = at.Sub(r.start) }

// recover puts things back after a migration that did not complete while
// the source still had the guest: it resumes a guest Run paused, and
// removes what the destination kept.
func (r *run) recover(ctx context.Context) {
	cctx, cancel := r.callCtx(ctx)
	defer cancel()
	if r.pausedByUs {
		if err := r.src.Resume(cctx, r.name); err != nil {
			r.o.log.Info("resuming the guest after the migration failed", "domain", r.name, "error", err.Error())
		} else {
			r.pausedByUs = false
		}
	}
	if r.dest.Host == nil {
		return
	}
	state, _, err := r.src.State(cctx, r.name)
	if err != nil || (state != domain.StateRunning && state != domain.StatePaused) {
		r.o.log.Info("the source no longer holds the guest; leaving the destination as it is", "domain", r.name, "state", state)
		return
	}
	dstate, _, err := r.dest.Host.State(cctx, r.name)
	if err != nil {
		return // nothing there, as libvirt leaves it
	}
	if dstate != domain.StateShutoff {
		if err := r.dest.Host.Destroy(cctx, r.name); err != nil {
			r.o.log.Info("removing the destination's domain failed", "domain", r.name, "error", err.Error())
			return
		}
		r.cleanedTarget = true
	}
	if !r.targetExisted {
		if err := r.dest.Host.Undefine(cctx, r.name); err == nil {
			r.cleanedTarget = true
		}
	}
	if r.cleanedTarget {
		r.o.log.Info("removed the domain the destination kept", "domain", r.name)
	}
}

// result describes the migration from what Run saw.
func (r *run) result() Result {
	res := Result{
		Domain:            r.name,
		Mode:              r.mode,
		Started:           r.start,
		Duration:          r.end,
		CompletionTimeout: r.completion,
		CleanedTarget:     r.cleanedTarget,
	}
	if r.last != nil {
		st := *r.last
		res.Stats = &st
		res.DataTotal, res.DataProcessed, res.Iterations = st.DataTotal, st.DataProcessed, st.Iteration
	}
	return res
}

// message is the hypervisor's own words for a Migrator error.
func message(err error) string {
	var de *domain.Error
	if errors.As(err, &de) && de.Message != "" {
		return de.Message
	}
	return err.Error()
}

func round(d time.Duration) time.Duration { return d.Round(time.Millisecond) }

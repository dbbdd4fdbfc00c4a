// Package fake is an in-memory importer.Interface for callers' unit tests
// (the DataVolume importer daemon's, a controller's): it records every
// call, returns for each source the Result or error scripted for its
// String(), and passes the contract suite virt/storage/importer/importertest
// where the contract needs no files.
//
// It reads no source and writes no file: Import does not open the Source,
// Blank creates nothing, and a Result is what was scripted (by default a
// raw image of virtual size 0), checked only against Target.Size. Symbolic
// links, formats, compression, sparse files and qemu-img are the real
// Importer's; run importer.New with an httptest server and a temporary
// folder for those (see virt/storage/importer's tests).
package fake

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/virtkit/virtkit/virt/storage"
	"github.com/virtkit/virtkit/virt/storage/importer"
)

// Operation names, for Call.Op.
const (
	OpImport = "import"
	OpBlank  = "blank"
)

// Call is one recorded call.
type Call struct {
	Op string
	// Source is the source's String() (empty for Blank).
	Source string
	Target importer.Target
}

// Importer is the fake. Its function fields, when set, replace the
// default behaviour of a method (after the call is recorded).
type Importer struct {
	ImportFunc func(ctx context.Context, src importer.Source, dst importer.Target) (importer.Result, error)
	BlankFunc  func(ctx context.Context, dst importer.Target) error

	mu       sync.Mutex
	calls    []Call
	outcomes map[string]outcome
	blankErr error
}

type outcome struct {
	res importer.Result
	err error
}

var _ importer.Interface = (*Importer)(nil)

// New returns a fake with nothing scripted.
func New() *Importer { return &Importer{outcomes: map[string]outcome{}} }

// SetResult makes Import of a source whose String() is source succeed with
// r, unless r.VirtualSize exceeds the target's Size (then ReasonTooLarge, as
// the real Importer) or r.Format is one the real Importer downloads before
// converting and the target has NoScratch (then ReasonScratchRequired).
func (f *Importer) SetResult(source string, r importer.Result) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.outcomes[source] = outcome{res: r}
}

// SetError makes Import of a source whose String() is source fail with
// err. An *importer.Error is returned as it is; to get one from a Reason,
// use Fail.
func (f *Importer) SetError(source string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.outcomes[source] = outcome{err: err}
}

// SetBlankError makes every Blank fail with err (nil: succeed again).
func (f *Importer) SetBlankError(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.blankErr = err
}

// Fail is an *importer.Error of reason from source, wrapping err (which
// may be nil), as the real Importer returns.
func Fail(reason importer.Reason, source string, err error) error {
	return &importer.Error{Reason: reason, Source: source, Err: err}
}

// Calls returns the recorded calls, oldest first.
func (f *Importer) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *Importer) record(c Call) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
}

// Import records the call and returns what was scripted for src.String().
// A cancelled context, a target without a path and a file target without
// a size fail as they do in the real Importer.
func (f *Importer) Import(ctx context.Context, src importer.Source, dst importer.Target) (importer.Result, error) {
	name := src.String()
	f.record(Call{Op: OpImport, Source: name, Target: dst})
	if f.ImportFunc != nil {
		return f.ImportFunc(ctx, src, dst)
	}
	if err := ctx.Err(); err != nil {
		return importer.Result{}, fmt.Errorf("import from %s: %w", name, err)
	}
	if err := checkTarget(name, dst); err != nil {
		return importer.Result{}, err
	}
	f.mu.Lock()
	o, ok := f.outcomes[name]
	f.mu.Unlock()
	switch {
	case !ok:
		return importer.Result{Format: importer.FormatRaw}, nil
	case o.err != nil:
		return importer.Result{}, o.err
	case dst.NoScratch && o.res.Format != "" && o.res.Format != importer.FormatRaw && o.res.Format != importer.FormatArchive:
		return importer.Result{}, Fail(importer.ReasonScratchRequired, name, fmt.Errorf("a %s image needs scratch space", o.res.Format))
	case dst.Size > 0 && o.res.VirtualSize > dst.Size:
		return importer.Result{}, Fail(importer.ReasonTooLarge, name,
			fmt.Errorf("%w: %d bytes, the target holds %d", storage.ErrImageTooLarge, o.res.VirtualSize, dst.Size))
	}
	return o.res, nil
}

// Blank records the call and succeeds unless SetBlankError says otherwise.
func (f *Importer) Blank(ctx context.Context, dst importer.Target) error {
	f.record(Call{Op: OpBlank, Target: dst})
	if f.BlankFunc != nil {
		return f.BlankFunc(ctx, dst)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("blank disk %s: %w", dst.Path, err)
	}
	if err := checkTarget("", dst); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.blankErr
}

// checkTarget is what the real Importer refuses of a target without
// looking at files.
func checkTarget(name string, dst importer.Target) error {
	switch {
	case dst.Path == "":
		return Fail(importer.ReasonWrite, name, errors.New("no target path"))
	case !dst.Block && dst.Size <= 0:
		return Fail(importer.ReasonWrite, name, fmt.Errorf("target size %d must be positive", dst.Size))
	}
	return nil
}

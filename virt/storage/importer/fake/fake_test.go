package fake_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/virtkit/virtkit/virt/storage/importer"
	"github.com/virtkit/virtkit/virt/storage/importer/fake"
	"github.com/virtkit/virtkit/virt/storage/importer/importertest"
)

// source is a Source the fake never opens.
type source string

func (s source) Open(context.Context) (io.ReadCloser, int64, error) {
	return nil, 0, errors.New("the fake opened a source")
}

func (s source) String() string { return "fake://" + string(s) }

// The fake passes the contract the real Importer passes, with scripted
// outcomes standing for the bytes it does not read.
func TestContract(t *testing.T) {
	importertest.Run(t, func(t *testing.T) importertest.Harness {
		f := fake.New()
		script := func(src importer.Source, want importertest.Want) importer.Source {
			if err := want.Err(src.String()); err != nil {
				f.SetError(src.String(), err)
			} else {
				f.SetResult(src.String(), want.Result)
			}
			return src
		}
		return importertest.Harness{
			Importer: f,
			Serve: func(_ *testing.T, name string, _ []byte, want importertest.Want) importer.Source {
				return script(source(name), want)
			},
			Unreachable: func(_ *testing.T, want importertest.Want) importer.Source {
				return script(source("unreachable"), want)
			},
		}
	})
}

func TestRecordsAndScripts(t *testing.T) {
	f := fake.New()
	ctx := context.Background()
	f.SetResult("fake://a", importer.Result{Format: "qcow2", VirtualSize: 1 << 20, Transferred: 300})
	f.SetError("fake://b", fake.Fail(importer.ReasonUnreachable, "fake://b", errors.New("no route")))
	f.SetResult("fake://big", importer.Result{Format: "raw", VirtualSize: 2 << 20})
	dst := importer.Target{Path: "/data/disk.img", Size: 1 << 20}

	res, err := f.Import(ctx, source("a"), dst)
	if err != nil || res.Format != "qcow2" {
		t.Errorf("Import(a) = %+v, %v", res, err)
	}
	if _, err := f.Import(ctx, source("b"), dst); !importer.IsRetryable(err) || !strings.Contains(err.Error(), "no route") {
		t.Errorf("Import(b): %v, want the scripted retryable error", err)
	}
	if _, err := f.Import(ctx, source("a"), importer.Target{Path: "/data/disk.img", Size: 1 << 20, NoScratch: true}); importer.ReasonOf(err) != importer.ReasonScratchRequired {
		t.Errorf("Import(a), a qcow2, without scratch space: %v, want %s", err, importer.ReasonScratchRequired)
	}
	if _, err := f.Import(ctx, source("big"), dst); importer.ReasonOf(err) != importer.ReasonTooLarge {
		t.Errorf("Import(big) into a smaller target: %v, want %s", err, importer.ReasonTooLarge)
	}
	if res, err := f.Import(ctx, source("unscripted"), dst); err != nil || res != (importer.Result{Format: importer.FormatRaw}) {
		t.Errorf("Import(unscripted) = %+v, %v; want an empty raw image", res, err)
	}
	f.SetBlankError(errors.New("full"))
	if err := f.Blank(ctx, dst); err == nil {
		t.Error("Blank after SetBlankError: no error")
	}
	want := []fake.Call{
		{Op: fake.OpImport, Source: "fake://a", Target: dst},
		{Op: fake.OpImport, Source: "fake://b", Target: dst},
		{Op: fake.OpImport, Source: "fake://a", Target: importer.Target{Path: dst.Path, Size: dst.Size, NoScratch: true}},
		{Op: fake.OpImport, Source: "fake://big", Target: dst},
		{Op: fake.OpImport, Source: "fake://unscripted", Target: dst},
		{Op: fake.OpBlank, Target: dst},
	}
	if diff := cmp.Diff(want, f.Calls()); diff != "" {
		t.Errorf("Calls (-want +got):\n%s", diff)
	}
}

// The function fields replace the scripted behaviour.
func TestFuncs(t *testing.T) {
	f := fake.New()
	f.ImportFunc = func(context.Context, importer.Source, importer.Target) (importer.Result, error) {
		return importer.Result{Format: "vmdk"}, nil
	}
	f.BlankFunc = func(context.Context, importer.Target) error { return errors.New("no") }
	if res, _ := f.Import(context.Background(), source("x"), importer.Target{}); res.Format != "vmdk" {
		t.Errorf("ImportFunc not used: %+v", res)
	}
	if err := f.Blank(context.Background(), importer.Target{}); err == nil {
		t.Error("BlankFunc not used")
	}
	if n := len(f.Calls()); n != 2 {
		t.Errorf("%d calls recorded, want 2", n)
	}
}

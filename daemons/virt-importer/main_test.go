package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"

	"github.com/virtkit/virtkit/virt/storage/importer"
	"github.com/virtkit/virtkit/virt/storage/importer/contract"
	"github.com/virtkit/virtkit/virt/storage/importer/fake"
)

// TestImportOnce: how each ending of an import becomes the exit code and
// the outcome the controller reads.
func TestImportOnce(t *testing.T) {
	const url = "https://images.example.com/disk.qcow2"
	args := contract.Args{Source: contract.SourceHTTP, URL: url, Target: "/data/disk.img", Size: 64 << 20, Scratch: contract.ScratchDir}
	noScratch := args
	noScratch.Scratch = ""
	env := map[string]string{contract.EnvAccessKeyID: "user", contract.EnvSecretKey: "pass"}
	for _, tc := range []struct {
		name string
		err  error
		res  importer.Result
		args contract.Args
		want contract.Outcome
		code int
		// noCall: refused before the importer is called.
		noCall bool
	}{
		{name: "imported", res: importer.Result{Format: "qcow2", VirtualSize: 32 << 20}, args: args,
			want: contract.Outcome{Message: "Import Complete", Format: "qcow2", VirtualSize: 32 << 20}},
		{name: "a qcow2 without scratch space: asks for it", res: importer.Result{Format: "qcow2", VirtualSize: 32 << 20}, args: noScratch,
			want: contract.Outcome{Message: "import from " + url + ": scratch space required: a qcow2 image needs scratch space", Reason: contract.ReasonScratchRequired, ScratchRequired: true}},
		{name: "raw without scratch space", res: importer.Result{Format: "raw", VirtualSize: 32 << 20}, args: noScratch,
			want: contract.Outcome{Message: "Import Complete", Format: "raw", VirtualSize: 32 << 20}},
		{name: "unreachable: retried", err: fake.Fail(importer.ReasonUnreachable, url, errors.New("connection refused")), args: args,
			want: contract.Outcome{Message: "import from " + url + ": source unreachable: connection refused", Reason: "Unreachable"}, code: exitRetry},
		{name: "corrupt: final", err: fake.Fail(importer.ReasonCorrupt, url, errors.New("bad header")), args: args,
			want: contract.Outcome{Message: "import from " + url + ": corrupt image: bad header", Reason: "Corrupt", Fatal: true}},
		{name: "a bad checksum spec: final", args: func() contract.Args { a := args; a.Checksum = "sha256:00"; return a }(),
			want: contract.Outcome{Message: `checksum "sha256:00": not a sha256 sum in hex`, Reason: "InvalidSource", Fatal: true}, noCall: true},
		{name: "a file", args: contract.Args{Source: contract.SourceFile, Path: "/source/disk.img", Name: "claim ns/golden", Target: "/data/disk.img", Size: 1 << 20},
			res: importer.Result{Format: "raw", VirtualSize: 1 << 20}, want: contract.Outcome{Message: "Import Complete", Format: "raw", VirtualSize: 1 << 20}},
		{name: "blank", args: contract.Args{Source: contract.SourceBlank, Target: "/data/disk.img", Size: 1 << 20},
			want: contract.Outcome{Message: "Import Complete", Format: "raw", VirtualSize: 1 << 20}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			im := fake.New()
			name := url
			if tc.args.Name != "" {
				name = tc.args.Name
			}
			if tc.err != nil {
				im.SetError(name, tc.err)
			} else {
				im.SetResult(name, tc.res)
			}
			got, code := importOnce(context.Background(), im, tc.args, func(k string) string { return env[k] })
			if diff := cmp.Diff(tc.want, got); diff != "" || code != tc.code {
				t.Errorf("importOnce: exit %d (want %d), outcome (-want +got):\n%s", code, tc.code, diff)
			}
			if calls := im.Calls(); tc.noCall && len(calls) > 0 || !tc.noCall && (len(calls) != 1 || calls[0].Target.Path != "/data/disk.img") {
				t.Errorf("importer calls %+v, want one into /data/disk.img", calls)
			}
		})
	}
}

// TestHTTPSource: the credentials come from the environment, the headers
// from the flags and the CAs from the ConfigMap folder (its ..data links
// followed within it, not outside).
func TestSources(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "..2026_12_05")
	must(t, os.Mkdir(data, 0o755))
	must(t, os.WriteFile(filepath.Join(data, "ca.pem"), []byte("-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n"), 0o644))
	must(t, os.Symlink("..2026_12_05", filepath.Join(dir, "..data")))
	must(t, os.Symlink("..data/ca.pem", filepath.Join(dir, "ca.pem")))
	a := contract.Args{URL: "https://h/d", Headers: []string{"X-A: 1", "X-B:two"}, CertDir: dir}
	src, err := httpSource(a, func(k string) string {
		return map[string]string{contract.EnvAccessKeyID: "u", contract.EnvSecretKey: "p"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	if src.Username != "u" || src.Password != "p" || src.Header.Get("X-A") != "1" || src.Header.Get("X-B") != "two" ||
		!strings.Contains(string(src.CABundle), "BEGIN CERTIFICATE") {
		t.Errorf("source %+v", src)
	}
	reg := contract.Args{Source: contract.SourceRegistry, URL: "docker://registry.example.com:5000/guest:v1", CertDir: dir, ProxyCertDir: dir, InsecureRegistry: true, Architecture: "arm64"}
	rs, err := registrySource(reg, func(k string) string {
		return map[string]string{contract.EnvAccessKeyID: "u", contract.EnvSecretKey: "p"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	if rs.Image != "registry.example.com:5000/guest:v1" || rs.Username != "u" || rs.Password != "p" || !rs.Insecure || rs.Architecture != "arm64" ||
		!strings.Contains(string(rs.CABundle), "BEGIN CERTIFICATE") || !strings.Contains(string(rs.ProxyCABundle), "BEGIN CERTIFICATE") {
		t.Errorf("registry source %+v", rs)
	}

	outside := t.TempDir()
	must(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("host file"), 0o644))
	must(t, os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "evil.pem")))
	if _, err := httpSource(a, os.Getenv); err == nil || !strings.Contains(err.Error(), "outside") {
		t.Errorf("a CA file linking outside the folder: %v", err)
	}
	if _, err := registrySource(reg, os.Getenv); err == nil || !strings.Contains(err.Error(), "outside") {
		t.Errorf("a registry CA file linking outside the folder: %v", err)
	}
}

// TestProgressServed: the gauge reads as the controller parses it.
func TestProgressServed(t *testing.T) {
	g := newGauge("uid-1")
	g.set(1, 4)
	stop := serveProgress(context.Background(), g, testLogger(t))
	defer stop()
	var body []byte
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", contract.ProgressPort))
		if err == nil {
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(string(body), contract.ProgressMetric+`{ownerUID="uid-1"} 25`) {
		t.Errorf("metrics page:\n%s", body)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func testLogger(t *testing.T) logr.Logger { return testr.New(t) }

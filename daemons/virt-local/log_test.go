package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Only virt-local's own steps reach the terminal: up shows the progress
// lines of serve's log, and the components' entries stay in the file.
func TestLogProgressLines(t *testing.T) {
	var buf bytes.Buffer
	log := newLogger(&buf, func() time.Time { return time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC) })
	log.Info("starting the registry", "address", "127.0.0.1:5000")
	log.WithValues("node", "local").Info("starting node", "bridge", "vk0", "pods", "10.88.1.0/24")
	log.Info("up", "nodes", []string{"local"}, "note", "two words", "empty", "")
	log.WithName("controlplane").Info("kube-apiserver started", "pid", 42)
	log.WithName("controller-runtime").WithValues("controller", "vm").Info("Starting workers")
	log.V(1).Info("chatty")
	log.Error(errors.New("boom"), "failed")

	want := []string{
		"starting the registry address=127.0.0.1:5000",
		"starting node node=local bridge=vk0 pods=10.88.1.0/24",
		`up nodes=[local] note="two words" empty=""`,
	}
	var got []string
	for _, l := range strings.SplitAfter(buf.String(), "\n") {
		if p, ok := progress(l); ok {
			got = append(got, p)
		}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("progress lines (-want +got):\n%s\nlog:\n%s", d, buf.String())
	}
	for _, s := range []string{`controlplane "level"=0 "msg"="kube-apiserver started" "pid"=42`, `"msg"="Starting workers"`, `"error"="boom"`} {
		if !strings.Contains(buf.String(), s) {
			t.Errorf("log lacks %s:\n%s", s, buf.String())
		}
	}
	if strings.Contains(buf.String(), "chatty") {
		t.Errorf("a V(1) entry was logged:\n%s", buf.String())
	}
}

// The follower prints only the progress lines a log gains, a whole line at
// a time.
func TestFollowerPrintsProgressOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "virt-local.log")
	write := func(s string) {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	write("09:59:59.000 virt-local: an earlier run\n")
	f := newFollower(path, int64(len("09:59:59.000 virt-local: an earlier run\n")))
	write("10:00:00.000 virt-local: starting the registry\nI1201 10:00:00.1 klog line\n10:00:00.200 node \"level\"=0 \"msg\"=\"x\"\n10:00:01.000 virt-local: start")
	var out bytes.Buffer
	f.print(&out)
	write("ing node node=local\n")
	f.print(&out)
	if d := cmp.Diff("  starting the registry\n  starting node node=local\n", out.String()); d != "" {
		t.Errorf("printed (-want +got):\n%s", d)
	}
	if got := tail(path, 0, 2); !cmp.Equal(got, []string{`10:00:00.200 node "level"=0 "msg"="x"`, "10:00:01.000 virt-local: starting node node=local"}) {
		t.Errorf("tail: %q", got)
	}
}

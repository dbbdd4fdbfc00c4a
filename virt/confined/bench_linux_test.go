//go:build linux

package confined_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/virtkit/virtkit/virt/confined"
)

// What confinement costs a node daemon per console or VNC session (a dial)
// and per exit-file read, against the plain path calls it replaced. Run
// side by side:
//
//	go test ./virt/confined/ -run '^$' -bench . -count 5
func BenchmarkDial(b *testing.B) {
	dir := b.TempDir()
	ln, err := net.Listen("unix", filepath.Join(dir, "serial0"))
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	ctx := context.Background()
	b.Run("path", func(b *testing.B) {
		var d net.Dialer
		for b.Loop() {
			c, err := d.DialContext(ctx, "unix", filepath.Join(dir, "serial0"))
			if err != nil {
				b.Fatal(err)
			}
			c.Close()
		}
	})
	b.Run("confined", func(b *testing.B) { // the folder held open, as a guest's is
		r, err := confined.Open(dir, confined.NoSymlinks)
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		for b.Loop() {
			c, err := r.DialUnix(ctx, "serial0")
			if err != nil {
				b.Fatal(err)
			}
			c.Close()
		}
	})
	b.Run("confined-open", func(b *testing.B) { // the folder opened per dial, as a migration dialer does
		for b.Loop() {
			r, err := confined.Open(dir, confined.NoSymlinks)
			if err != nil {
				b.Fatal(err)
			}
			c, err := r.DialUnix(ctx, "serial0")
			if err != nil {
				b.Fatal(err)
			}
			c.Close()
			r.Close()
		}
	})
}

func BenchmarkReadFile(b *testing.B) {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "exit"), []byte(`{"code":0,"reason":"guest shut down"}`), 0o644); err != nil {
		b.Fatal(err)
	}
	b.Run("path", func(b *testing.B) {
		for b.Loop() {
			if _, err := os.ReadFile(filepath.Join(dir, "exit")); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("confined", func(b *testing.B) {
		r, err := confined.Open(dir, confined.NoSymlinks)
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		for b.Loop() {
			if _, err := r.ReadFile("exit", 64<<10); err != nil {
				b.Fatal(err)
			}
		}
	})
}

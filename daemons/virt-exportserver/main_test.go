package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/virtkit/virtkit/virt/storage/export"
	"github.com/virtkit/virtkit/virt/storage/upload"
)

func TestRunExitCodes(t *testing.T) {
	dir := t.TempDir()
	certPEM, keyPEM, err := upload.NewServerCert("export.test", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM, "token": []byte("t")} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "disk"), 0o755); err != nil {
		t.Fatal(err)
	}
	good := export.Config{Export: "e", Listen: "127.0.0.1:0", CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key"),
		TokenFile: filepath.Join(dir, "token"), Volumes: []export.Volume{{Claim: "disk", Path: filepath.Join(dir, "disk"), Content: export.DiskImage}}}
	missing := good
	missing.Volumes = []export.Volume{{Claim: "disk", Path: filepath.Join(dir, "absent"), Content: export.DiskImage}}
	badCert := good
	badCert.CertFile = filepath.Join(dir, "token")
	for _, tc := range []struct {
		name string
		cfg  export.Config
		env  map[string]string
		want int
	}{
		{name: "stopped", cfg: good, want: exitDone},
		{name: "deadline passed", cfg: func() export.Config { c := good; c.Deadline = time.Now().Add(-time.Minute); return c }(), want: exitDone},
		{name: "volume missing", cfg: missing, want: exitFailed},
		{name: "not a certificate", cfg: badCert, want: exitFailed},
		{name: "no configuration", env: map[string]string{}, want: exitConfig},
		{name: "bad deadline", env: map[string]string{"DEADLINE": "tomorrow"}, want: exitConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := tc.env
			if env == nil {
				kv, err := tc.cfg.Env()
				if err != nil {
					t.Fatal(err)
				}
				env = map[string]string{}
				for _, p := range kv {
					env[p[0]] = p[1]
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			if got := run(ctx, func(k string) (string, bool) { v, ok := env[k]; return v, ok }, logr.Discard()); got != tc.want {
				t.Errorf("run: exit %d, want %d", got, tc.want)
			}
		})
	}
}

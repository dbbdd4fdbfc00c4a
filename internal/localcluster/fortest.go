package localcluster

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"

	"github.com/virtkit/virtkit/internal/testenv"
)

// StartTimeout bounds ForTest's start: a build of the test guest, if it is
// not current (5 minutes), and virt-local's start with the guest's push
// (3 minutes).
const StartTimeout = 8 * time.Minute

// ForTest starts a cluster for t as o says (an integration test: skipped
// under -short) and stops it when t ends. Unset, o.Repo is the checkout
// the test runs in, o.DataDir a data folder in the test's own temporary
// directory, and o.Logger t's log.
func ForTest(t *testing.T, o Options) *Cluster {
	t.Helper()
	testenv.Integration(t)
	if o.Repo == "" {
		root, err := testenv.RepoRoot()
		if err != nil {
			t.Fatal(err)
		}
		o.Repo = root
	}
	if o.DataDir == "" {
		o.DataDir = filepath.Join(testenv.Dir(t), "data")
	}
	if o.Logger.GetSink() == nil {
		o.Logger = testr.NewWithOptions(t, testr.Options{Verbosity: 0})
	}
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	c, err := Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(context.Background()); err != nil {
			t.Errorf("virt-local down: %v", err)
		}
	})
	return c
}

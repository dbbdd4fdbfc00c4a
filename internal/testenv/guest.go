package testenv

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/virtkit/virtkit/internal/testguest"
)

// Guest returns the test guest, building it with hack/guest/build.sh when it
// is missing or out of date.
func Guest(t testing.TB) testguest.Artifacts {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	a, err := testguest.Build(ctx, root)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return a
}

// WaitConsole waits until a line of the console log matches re and returns it.
// When ctx ends first it fails the test and quotes the log's last lines.
func WaitConsole(t testing.TB, ctx context.Context, path string, re *regexp.Regexp) string {
	t.Helper()
	line, err := testguest.WaitLine(ctx, path, re)
	if err != nil {
		t.Fatalf("testenv: %v; last lines:\n%s", err, testguest.Tail(path, 15))
	}
	return line
}

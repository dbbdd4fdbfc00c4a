package testenv

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// WaitSeries reads a /metrics url with hc (nil: http.DefaultClient) until
// its answer has a line starting with each of want (a series name, or a
// name with the start of its labels). When ctx ends first it fails the
// test with what the url served and, if said is not nil, said() (the
// daemon's log).
func WaitSeries(ctx context.Context, t testing.TB, hc *http.Client, url string, said func() string, want ...string) {
	t.Helper()
	if hc == nil {
		hc = http.DefaultClient
	}
	var body string
	var missing []string
	for {
		missing = missing[:0]
		if resp, err := hc.Get(url); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
		} else {
			body = err.Error()
		}
		for _, w := range want {
			if !strings.HasPrefix(body, w) && !strings.Contains(body, "\n"+w) {
				missing = append(missing, w)
			}
		}
		if len(missing) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			log := ""
			if said != nil {
				log = "\nthe daemon said:\n" + said()
			}
			t.Fatalf("%s lacks %q; it serves:\n%s%s", url, missing, body, log)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

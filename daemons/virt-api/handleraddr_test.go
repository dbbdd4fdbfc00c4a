package main

import (
	"context"
	"strings"
	"testing"

	"github.com/virtkit/virtkit/virtapi/nodeapi"
)

// --handler-address takes NODE=https://HOST:PORT once per node and refuses
// anything else, naming the node and the reason.
func TestHandlerAddress(t *testing.T) {
	for _, tc := range []struct {
		values []string
		want   string // "" for success; else a part of the error
	}{
		{values: []string{"a=https://127.0.0.1:1", "b=https://127.0.0.1:2"}},
		{values: []string{"a"}, want: "want NODE=https://HOST:PORT"},
		{values: []string{"=https://127.0.0.1:1"}, want: "want NODE=https://HOST:PORT"},
		{values: []string{"a=http://127.0.0.1:1"}, want: "node a: \"http://127.0.0.1:1\": the node API speaks https only"},
		{values: []string{"a=https://"}, want: "speaks https only"},
		{values: []string{"a=https://127.0.0.1:1", "a=https://127.0.0.1:2"}, want: "node a: named twice"},
	} {
		var c config
		var err error
		for _, v := range tc.values {
			if err = c.addHandlerAddress(v); err != nil {
				break
			}
		}
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v", tc.values, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: error %v, want one with %q", tc.values, err, tc.want)
		}
	}
}

// With addresses, a handler is found at its own and an unknown node is
// unavailable; without, by its pod.
func TestLocatorFromAddresses(t *testing.T) {
	var c config
	for _, v := range []string{"a=https://127.0.0.1:1", "b=https://127.0.0.1:2"} {
		if err := c.addHandlerAddress(v); err != nil {
			t.Fatal(err)
		}
	}
	l := c.locator(nil, nil)
	ep, err := l.Locate(context.Background(), "b")
	if err != nil || ep.URL.String() != "https://127.0.0.1:2" {
		t.Errorf("Locate(b) = %v, %v", ep.URL, err)
	}
	if _, err := l.Locate(context.Background(), "c"); err == nil {
		t.Error("Locate(c) found a handler of an unnamed node")
	}
	if _, ok := (config{}).locator(nil, nil).(*nodeapi.PodLocator); !ok {
		t.Error("without --handler-address, the locator is not the pod locator")
	}
}

package nodeapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"net/url"

	"github.com/virtkit/virtkit/virtapi/nodeapi"
)

// A node's handler serves Ops with NewServer; virt-api finds it with a
// Locator and calls it with a Client. Here the node is a Fake.
func Example() {
	node := nodeapi.NewFake()
	node.Set("default", "vm1", nodeapi.FakeVMI{})
	handler := httptest.NewTLSServer(nodeapi.NewServer(node))
	defer handler.Close()

	u, _ := url.Parse(handler.URL)
	locator := nodeapi.StaticLocator{"node-a": {URL: u, TLS: serverTLS(handler)}}
	ctx := context.Background()
	ep, _ := locator.Locate(ctx, "node-a")
	ops := nodeapi.NewClient(ep)

	fmt.Println(ops.Pause(ctx, "default", "vm1"))
	err := ops.Pause(ctx, "default", "vm1")
	fmt.Println(err != nil && errors.Is(err, nodeapi.ErrConflict))
	st, _ := node.State("default", "vm1")
	fmt.Println(st.Paused)
	// Output:
	// <nil>
	// true
	// true
}

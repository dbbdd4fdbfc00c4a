package fake_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/virtkit/virtkit/virt/domain"
	"github.com/virtkit/virtkit/virt/domain/fake"
)

// Drive the fake like any Manager, and inject a failure and an event.
func Example() {
	ctx := context.Background()
	m := fake.New()
	defer m.Close()
	events, _ := m.Events(ctx)

	_ = m.Define(ctx, Document("vm"))
	_ = m.Start(ctx, "vm", domain.StartOptions{})
	fmt.Println(m.GuestAgentPing(ctx, "vm"))

	m.FailNext(domain.OpShutdown, domain.ErrConnectionLost)
	err := m.Shutdown(ctx, "vm")
	fmt.Println(errors.Is(err, domain.ErrConnectionLost))

	_ = m.Shutdown(ctx, "vm")
	state, reason, _ := m.State(ctx, "vm")
	fmt.Println(state, domain.ReasonString(state, reason))

	m.Emit(domain.Event{Domain: "vm", Type: domain.EventCrashed})
	for e := range events {
		fmt.Println(e)
		if e.Type == domain.EventCrashed {
			break
		}
	}
	// Output:
	// <nil>
	// true
	// shutoff shutdown
	// domain "vm": defined/0
	// domain "vm": started/0
	// domain "vm": shutdown/1
	// domain "vm": stopped/0
	// domain "vm": crashed/0
}

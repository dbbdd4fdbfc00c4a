package benchkit

import (
	"context"
	"fmt"
	"time"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/virt/domain"
)

// StartRunning defines and starts a guest, returning the seconds from the
// define call until libvirt reports it running: the plain libvirt floor.
func StartRunning(ctx context.Context, m domain.Manager, doc *libvirtxml.Domain) (float64, error) {
	begin := time.Now()
	if err := m.Define(ctx, doc); err != nil {
		return 0, err
	}
	if err := m.Start(ctx, doc.Name, domain.StartOptions{}); err != nil {
		return 0, err
	}
	for {
		st, _, err := m.State(ctx, doc.Name)
		if err == nil && st == domain.StateRunning {
			return time.Since(begin).Seconds(), nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("guest %s not running: %w", doc.Name, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

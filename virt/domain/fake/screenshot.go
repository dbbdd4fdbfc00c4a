package fake

import (
	"bytes"
	"context"
	"fmt"

	"github.com/virtkit/virtkit/virt/domain"
)

// ScreenWidth and ScreenHeight are the size of the fake's display: what
// QEMU's VGA shows a guest in text mode.
const (
	ScreenWidth  = 720
	ScreenHeight = 400
)

// Screenshot captures a running domain's display; see
// domain.Manager.Screenshot. As QEMU does without PNG support, it answers
// a binary PPM: a blank screen of ScreenWidth x ScreenHeight. A domain
// with no video device fails with ErrUnsupported.
func (m *Manager) Screenshot(ctx context.Context, name string) (domain.Screenshot, error) {
	var shot domain.Screenshot
	err := m.onDomain(ctx, domain.OpScreenshot, name, func(d *fakeDomain) error {
		if d.live == nil {
			return invalidState(domain.OpScreenshot, name, "domain is not running")
		}
		if d.live.Devices == nil || len(d.live.Devices.Videos) == 0 {
			return &domain.Error{Op: domain.OpScreenshot, Domain: name, Kind: domain.ErrUnsupported,
				Message: "no screens to take screenshot from"}
		}
		var b bytes.Buffer
		fmt.Fprintf(&b, "P6\n%d %d\n255\n", ScreenWidth, ScreenHeight)
		b.Write(make([]byte, ScreenWidth*ScreenHeight*3))
		shot = domain.Screenshot{MIME: domain.MIMEPPM, Data: b.Bytes()}
		return nil
	})
	return shot, err
}

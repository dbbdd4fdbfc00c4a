package libvirt

import (
	"context"
	"errors"
	"fmt"
	"io"

	"libvirt.org/go/libvirt"

	"github.com/virtkit/virtkit/virt/domain"
)

const opScreenshot = domain.OpScreenshot

// Screenshot captures the primary display; see domain.Manager.Screenshot.
// libvirt has QEMU write the display and streams the file back; the stream
// is read to its end or to domain.MaxScreenshotBytes, whichever is first.
func (m *Manager) Screenshot(ctx context.Context, name string) (domain.Screenshot, error) {
	var shot domain.Screenshot
	err := m.call(ctx, opScreenshot, name, func(c *libvirt.Connect) error {
		d, err := c.LookupDomainByName(name)
		if err != nil {
			return err
		}
		defer d.Free()
		st, err := c.NewStream(0)
		if err != nil {
			return err
		}
		defer func() { _ = st.Free() }()
		mime, err := d.Screenshot(st, 0, 0)
		if err != nil {
			return err
		}
		buf := make([]byte, 64<<10)
		for {
			n, err := st.Recv(buf)
			if errors.Is(err, io.EOF) || (err == nil && n == 0) {
				break
			}
			if err != nil {
				_ = st.Abort()
				return err
			}
			if len(shot.Data)+n > domain.MaxScreenshotBytes {
				_ = st.Abort()
				return fmt.Errorf("the screenshot of domain %s is larger than %d bytes", name, domain.MaxScreenshotBytes)
			}
			shot.Data = append(shot.Data, buf[:n]...)
		}
		shot.MIME = mime
		return st.Finish()
	})
	if err != nil {
		return domain.Screenshot{}, err
	}
	return shot, nil
}

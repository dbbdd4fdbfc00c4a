package hollow

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/virtkit/virtkit/local/node"
)

// images is the hollow node.ImageStore (Node.Images).
type images struct{ dir string }

var _ node.ImageStore = images{}

// DiskFile is the file each hollow image holds, below /disk.
const DiskFile = "disk.qcow2"

// Mount implements node.ImageStore.
func (im images) Mount(_ context.Context, ref string) (string, error) {
	sum := sha256.Sum256([]byte(ref))
	dir := filepath.Join(im.dir, hex.EncodeToString(sum[:]))
	if err := os.MkdirAll(filepath.Join(dir, "disk"), 0o755); err != nil {
		return "", fmt.Errorf("hollow: image %s: %w", ref, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "disk", DiskFile), os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return "", fmt.Errorf("hollow: image %s: %w", ref, err)
	}
	return dir, f.Close()
}

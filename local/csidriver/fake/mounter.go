// Package fake has a csidriver.Mounter that mounts nothing: it records
// each publication and checks what the host one would, so that the driver
// (and what drives it) runs in tests without privileges.
package fake

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/virtkit/virtkit/local/csidriver"
)

// Mounter records publications by target. The zero value is ready.
type Mounter struct {
	mu     sync.Mutex
	mounts map[string]Mount
}

// Mount is one recorded publication.
type Mount struct {
	Source   string
	ReadOnly bool
	Block    bool
	// Refreshes counts Refresh calls.
	Refreshes int
}

var _ csidriver.Mounter = (*Mounter)(nil)

// BindDir implements csidriver.Mounter: source and target must be folders.
func (m *Mounter) BindDir(source, target string, readOnly bool) error {
	return m.bind(source, target, readOnly, false)
}

// BindBlock implements csidriver.Mounter: source and target must be
// regular files.
func (m *Mounter) BindBlock(source, target string, readOnly bool) error {
	return m.bind(source, target, readOnly, true)
}

func (m *Mounter) bind(source, target string, readOnly, block bool) error {
	for _, p := range []string{source, target} {
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if st.IsDir() == block || st.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("fake mounter: %s: wrong kind of file for block=%t", p, block)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	target = filepath.Clean(target)
	if _, ok := m.mounts[target]; ok {
		return fmt.Errorf("fake mounter: %s is mounted already", target)
	}
	if m.mounts == nil {
		m.mounts = map[string]Mount{}
	}
	m.mounts[target] = Mount{Source: source, ReadOnly: readOnly, Block: block}
	return nil
}

// Unmount implements csidriver.Mounter.
func (m *Mounter) Unmount(target string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.mounts, filepath.Clean(target))
	return nil
}

// Refresh implements csidriver.Mounter.
func (m *Mounter) Refresh(target string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	mt, ok := m.mounts[filepath.Clean(target)]
	if !ok || !mt.Block {
		return fmt.Errorf("fake mounter: no block device at %s", target)
	}
	mt.Refreshes++
	m.mounts[filepath.Clean(target)] = mt
	return nil
}

// IsMounted implements csidriver.Mounter.
func (m *Mounter) IsMounted(target string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.mounts[filepath.Clean(target)]
	return ok, nil
}

// Mounts returns the publications now, by target.
func (m *Mounter) Mounts() map[string]Mount {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]Mount, len(m.mounts))
	for k, v := range m.mounts {
		out[k] = v
	}
	return out
}

package csidriver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// The layout under a driver's root. A volume is volumes/<id>, holding its
// record and either the folder data/ (the file system a pod sees) or the
// file block (a Block volume's bytes); a snapshot is snapshots/<id> alike.
// Both are built under tmp/ and renamed into place; deletion renames them
// back there first, so neither is ever seen half made or half removed.
const (
	volumesDir      = "volumes"
	snapshotsDir    = "snapshots"
	publicationsDir = "publications"
	tmpDir          = "tmp"
	dataDir         = "data"
	blockFile       = "block"
	volumeRecordF   = "volume.json"
	snapshotRecordF = "snapshot.json"
	// maxRecord bounds a record read back.
	maxRecord = 64 << 10
)

// volumeRecord is what the driver keeps of a volume.
type volumeRecord struct {
	ID       string    `json:"id"`
	Name     string    `json:"name"`
	Capacity int64     `json:"capacity"`
	Block    bool      `json:"block,omitempty"`
	Created  time.Time `json:"created"`
	// At most one of these: what the volume was made from.
	SourceSnapshot string `json:"sourceSnapshot,omitempty"`
	SourceVolume   string `json:"sourceVolume,omitempty"`
}

// snapshotRecord is what the driver keeps of a snapshot.
type snapshotRecord struct {
	ID           string    `json:"id"`
	Name         string    `json:"name"`
	SourceVolume string    `json:"sourceVolume"`
	Size         int64     `json:"size"`
	Block        bool      `json:"block,omitempty"`
	Created      time.Time `json:"created"`
}

// store is the root's folders.
type store struct {
	root string
	// locks serializes the work on one volume or snapshot ID.
	locks keyedMutex
}

func newStore(root string) (*store, error) {
	if !filepath.IsAbs(root) {
		return nil, fmt.Errorf("csidriver: root %q is not an absolute path", root)
	}
	for _, d := range []string{volumesDir, snapshotsDir, publicationsDir, tmpDir} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o700); err != nil {
			return nil, fmt.Errorf("csidriver: %w", err)
		}
	}
	// What an earlier run left half made or half removed.
	ents, err := os.ReadDir(filepath.Join(root, tmpDir))
	if err != nil {
		return nil, fmt.Errorf("csidriver: %w", err)
	}
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(root, tmpDir, e.Name())); err != nil {
			return nil, fmt.Errorf("csidriver: %w", err)
		}
	}
	return &store{root: root}, nil
}

func (s *store) volumeDir(id string) string   { return filepath.Join(s.root, volumesDir, id) }
func (s *store) snapshotDir(id string) string { return filepath.Join(s.root, snapshotsDir, id) }

// volumeData is the path a volume's consumer sees: its folder, or its file
// for a Block volume.
func (s *store) volumeData(v volumeRecord) string { return VolumeData(s.root, v.ID, v.Block) }

// VolumeData is where the data of the volume with ID id lie under a
// driver's root: the folder a pod sees, or a Block volume's file. The
// folder holding it is the volume's, gone once the volume is deleted.
func VolumeData(root, id string, block bool) string {
	if block {
		return filepath.Join(root, volumesDir, id, blockFile)
	}
	return filepath.Join(root, volumesDir, id, dataDir)
}

func (s *store) snapshotData(r snapshotRecord) string {
	if r.Block {
		return filepath.Join(s.snapshotDir(r.ID), blockFile)
	}
	return filepath.Join(s.snapshotDir(r.ID), dataDir)
}

// volume reads volume id's record; fs.ErrNotExist when there is none.
func (s *store) volume(id string) (volumeRecord, error) {
	var r volumeRecord
	if !validID(id) {
		return r, fmt.Errorf("volume ID %q: %w", id, fs.ErrNotExist)
	}
	return r, readRecord(filepath.Join(s.volumeDir(id), volumeRecordF), &r)
}

// snapshot reads snapshot id's record; fs.ErrNotExist when there is none.
func (s *store) snapshot(id string) (snapshotRecord, error) {
	var r snapshotRecord
	if !validID(id) {
		return r, fmt.Errorf("snapshot ID %q: %w", id, fs.ErrNotExist)
	}
	return r, readRecord(filepath.Join(s.snapshotDir(id), snapshotRecordF), &r)
}

// snapshots reads every snapshot's record.
func (s *store) snapshots() ([]snapshotRecord, error) {
	ents, err := os.ReadDir(filepath.Join(s.root, snapshotsDir))
	if err != nil {
		return nil, err
	}
	var out []snapshotRecord
	for _, e := range ents {
		r, err := s.snapshot(e.Name())
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// fill writes a new item's content into dir, a scratch folder.
type fill func(dir string) error

// create makes the item whose final folder is final: a scratch folder
// filled by fill, its record written, renamed into place. On any error
// nothing is left.
func (s *store) create(final, recordName string, record any, f fill) error {
	scratch, err := os.MkdirTemp(filepath.Join(s.root, tmpDir), filepath.Base(final)+".")
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			_ = os.RemoveAll(scratch)
		}
	}()
	if err := os.Chmod(scratch, 0o700); err != nil {
		return err
	}
	if err := f(scratch); err != nil {
		return err
	}
	if err := writeRecord(filepath.Join(scratch, recordName), record); err != nil {
		return err
	}
	if err := os.Rename(scratch, final); err != nil {
		return err
	}
	ok = true
	return nil
}

// remove takes the item in folder dir away at once and then deletes it.
func (s *store) remove(dir string) error {
	grave, err := os.MkdirTemp(filepath.Join(s.root, tmpDir), filepath.Base(dir)+".deleted.")
	if err != nil {
		return err
	}
	dest := filepath.Join(grave, "item")
	if err := os.Rename(dir, dest); err != nil {
		_ = os.Remove(grave)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	return os.RemoveAll(grave)
}

// updateVolume rewrites volume r's record.
func (s *store) updateVolume(r volumeRecord) error {
	return writeRecord(filepath.Join(s.volumeDir(r.ID), volumeRecordF), r)
}

// writeRecord writes v as JSON to path, atomically.
func writeRecord(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp" + strconv.Itoa(os.Getpid())
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

// readRecord reads the JSON record at path into v.
func readRecord(path string, v any) error {
	f, err := os.OpenFile(path, os.O_RDONLY|oNoFollow, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxRecord+1))
	if err != nil {
		return err
	}
	if len(b) > maxRecord {
		return fmt.Errorf("%s: larger than %d bytes", path, maxRecord)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// keyedMutex is one mutex per key, made on demand and dropped when free.
type keyedMutex struct {
	mu    sync.Mutex
	locks map[string]*keyedEntry
}

type keyedEntry struct {
	mu    sync.Mutex
	users int
}

// lock locks key and returns its unlock.
func (k *keyedMutex) lock(key string) func() {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*keyedEntry{}
	}
	e := k.locks[key]
	if e == nil {
		e = &keyedEntry{}
		k.locks[key] = e
	}
	e.users++
	k.mu.Unlock()
	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		k.mu.Lock()
		if e.users--; e.users == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
}

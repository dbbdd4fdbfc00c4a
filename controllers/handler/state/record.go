package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/virtkit/virtkit/virt/network"
	"github.com/virtkit/virtkit/virt/storage"
)

// Record is what the handler keeps on the node for each VMI it started, in
// <state folder>/<uid>.json: the plans a restarted handler needs to adopt
// the guest and, later, to tear down exactly what was set up (a bridge
// binding's pod addresses cannot be discovered again once the guest has them).
type Record struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	UID       types.UID `json:"uid"`
	// Folder is the key of the launcher's folder, which names its pod (the
	// handler's launcherPod): the VMI's UID (also when empty, as earlier
	// handlers wrote it) or, for a guest that came by migration, the
	// migration's.
	Folder  types.UID    `json:"folder,omitempty"`
	Storage storage.Plan `json:"storage,omitempty"`
	Network network.Plan `json:"network,omitempty"`
}

// Key is the VMI the record is of.
func (r Record) Key() types.NamespacedName {
	return types.NamespacedName{Namespace: r.Namespace, Name: r.Name}
}

// Store reads and writes records in one folder, Dir, one file per VMI
// named after its UID. The folder is the handler's own (0700); a record
// is nevertheless checked on every load, since it names API objects and a
// node folder.
type Store struct{ Dir string }

// Path is the file of uid's record.
func (s Store) Path(uid types.UID) string { return filepath.Join(s.Dir, string(uid)+".json") }

// Save writes rec atomically (a temporary file renamed over the old one).
func (s Store) Save(rec Record) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("handler: state of VMI %s/%s: %w", rec.Namespace, rec.Name, err)
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return fmt.Errorf("handler: state folder: %w", err)
	}
	tmp, err := os.CreateTemp(s.Dir, "."+string(rec.UID)+".*")
	if err != nil {
		return fmt.Errorf("handler: state of VMI %s/%s: %w", rec.Namespace, rec.Name, err)
	}
	_, werr := tmp.Write(append(b, '\n'))
	if err := errors.Join(werr, tmp.Sync(), tmp.Close()); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("handler: state of VMI %s/%s: %w", rec.Namespace, rec.Name, err)
	}
	if err := os.Rename(tmp.Name(), s.Path(rec.UID)); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("handler: state of VMI %s/%s: %w", rec.Namespace, rec.Name, err)
	}
	return nil
}

// Load returns the record of uid; ok is false when there is none. A record
// that fails [Record.Check] is an error.
func (s Store) Load(uid types.UID) (rec Record, ok bool, err error) {
	b, err := os.ReadFile(s.Path(uid))
	if errors.Is(err, fs.ErrNotExist) {
		return Record{}, false, nil
	}
	if err != nil {
		return Record{}, false, fmt.Errorf("handler: state of VMI uid %s: %w", uid, err)
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return Record{}, false, fmt.Errorf("handler: state of VMI uid %s in %s: %w", uid, s.Path(uid), err)
	}
	if err := rec.Check(uid); err != nil {
		return Record{}, false, fmt.Errorf("handler: state of VMI uid %s in %s: %w", uid, s.Path(uid), err)
	}
	return rec, true, nil
}

// Check refuses a record that is not the one of uid, or whose names could
// not be a VMI's: its namespace, name and folder key reach API calls, so a
// damaged record must not name another object's; the folder key must be
// one name, as a UID is.
func (r Record) Check(uid types.UID) error {
	if r.UID != uid {
		return fmt.Errorf("the record is of uid %q", r.UID)
	}
	if errs := validation.IsDNS1123Label(r.Namespace); len(errs) > 0 {
		return fmt.Errorf("namespace %q: %s", r.Namespace, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Subdomain(r.Name); len(errs) > 0 {
		return fmt.Errorf("name %q: %s", r.Name, strings.Join(errs, "; "))
	}
	if f := string(r.Folder); f != "" && (f == "." || f == ".." || strings.ContainsAny(f, "/\x00") || len(f) > validation.DNS1123SubdomainMaxLength) {
		return fmt.Errorf("folder %q: not one name", r.Folder)
	}
	return nil
}

// Remove deletes the record of uid; a missing one is fine.
func (s Store) Remove(uid types.UID) error {
	if err := os.Remove(s.Path(uid)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("handler: state of VMI uid %s: %w", uid, err)
	}
	return nil
}

// List returns every record in the folder; unreadable ones are reported
// together and skipped.
func (s Store) List() ([]Record, error) {
	entries, err := os.ReadDir(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("handler: state folder: %w", err)
	}
	var out []Record
	var errs []error
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || strings.HasPrefix(name, ".") {
			continue
		}
		rec, found, err := s.Load(types.UID(name))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if found {
			out = append(out, rec)
		}
	}
	return out, errors.Join(errs...)
}

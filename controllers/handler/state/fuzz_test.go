package state

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/types"
)

// FuzzStateRecord feeds arbitrary bytes to the handler's reading of a state
// record. Whatever the bytes, load returns; a record it accepts is the one
// of the file's UID, its folder key is one name (as a UID is), and it survives save and load unchanged. Run with
//
//	go test ./controllers/handler/state/ -run '^$' -fuzz FuzzStateRecord -fuzztime 60s
func FuzzStateRecord(f *testing.F) {
	const uid = types.UID("6f1c2a3e-0000-4000-8000-000000000001")
	f.Add([]byte(`{"namespace":"default","name":"vm1","uid":"` + string(uid) + `"}`))
	f.Add([]byte(`{"namespace":"default","name":"vm1","uid":"` + string(uid) + `","folder":"../../etc"}`))
	f.Add([]byte(`{"namespace":"default","name":"vm1","uid":"` + string(uid) + `","folder":"7a0c9b11-0000-4000-8000-0000000000aa",` +
		`"storage":{"disks":[{"name":"rootdisk"}]},"network":{"interfaces":[{"interface":"default","mac":"02:00:00:00:00:01"}]}}`))
	f.Add([]byte(`{"namespace":"Default","name":"vm1","uid":"other"}`))
	f.Add([]byte(`{"namespace":"default","name":"vm1","uid":"` + string(uid) + `","storage":null,"network":{}}` + "\n"))
	f.Add([]byte("{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := Store{Dir: t.TempDir()}
		if err := os.WriteFile(s.Path(uid), data, 0o600); err != nil {
			t.Fatal(err)
		}
		rec, ok, err := s.Load(uid)
		if err != nil {
			if ok {
				t.Fatalf("load: ok with error %v", err)
			}
			return
		}
		if !ok {
			t.Fatal("load: a record file found not ok, with no error")
		}
		if rec.UID != uid {
			t.Fatalf("accepted the record of uid %q from the file of %q", rec.UID, uid)
		}
		if f := string(rec.Folder); f != "" {
			base := "/run/virtkit/pods"
			if p := filepath.Join(base, f); filepath.Dir(p) != base {
				t.Fatalf("folder %q leads to %s, outside %s", f, p, base)
			}
		}
		if rec.Namespace == "" || rec.Name == "" || strings.Contains(rec.Namespace+rec.Name, "/") {
			t.Fatalf("accepted namespace %q name %q", rec.Namespace, rec.Name)
		}
		if err := s.Save(rec); err != nil {
			t.Fatalf("save of an accepted record: %v", err)
		}
		again, ok, err := s.Load(uid)
		if err != nil || !ok {
			t.Fatalf("load after save: ok %t, %v", ok, err)
		}
		opts := cmp.Options{cmpopts.EquateEmpty()}
		if d := cmp.Diff(rec, again, opts); d != "" {
			t.Errorf("the record changed through save and load (-loaded +reloaded):\n%s", d)
		}
	})
}

package stale_test

import (
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit/controllers/stale"
)

var (
	vm1 = types.NamespacedName{Namespace: "ns", Name: "vm1"}
	vm2 = types.NamespacedName{Namespace: "ns", Name: "vm2"}
)

// op is one call on a Guard: Replaced when replaced is set, Forget when
// forget, else Stale of stale, whose result is recorded.
type op struct {
	key      types.NamespacedName
	replaced [2]string // old, cur
	stale    string
	forget   bool
}

func replaced(key types.NamespacedName, old, cur string) op {
	return op{key: key, replaced: [2]string{old, cur}}
}
func check(key types.NamespacedName, v string) op { return op{key: key, stale: v} }
func forget(key types.NamespacedName) op          { return op{key: key, forget: true} }

func TestGuard(t *testing.T) {
	tests := []struct {
		name    string
		ops     []op
		want    []bool // the results of the Stale calls, in order
		wantLen int
	}{{
		name: "every version our writes replaced is stale; our last one is not, and clears the record",
		ops: []op{replaced(vm1, "1", "2"), replaced(vm1, "2", "3"),
			check(vm1, "1"), check(vm1, "2"), check(vm1, "3"), check(vm1, "1")},
		want: []bool{true, true, false, false},
	}, {
		name: "a newer version written by someone else clears the record too",
		ops:  []op{replaced(vm1, "1", "2"), check(vm1, "7"), check(vm1, "1")},
		want: []bool{false, false},
	}, {
		name: "a write that changed nothing keeps its version current",
		ops:  []op{replaced(vm1, "4", "4"), check(vm1, "4")},
		want: []bool{false},
	}, {
		name:    "records are per object",
		ops:     []op{replaced(vm1, "1", "2"), replaced(vm2, "5", "6"), check(vm2, "6"), check(vm1, "1")},
		want:    []bool{false, true},
		wantLen: 1,
	}, {
		name: "a deleted object's UID: stale until an object of another UID is seen",
		ops:  []op{replaced(vm1, "uid-a", ""), check(vm1, "uid-a"), check(vm1, "uid-b"), check(vm1, "uid-a")},
		want: []bool{true, false, false},
	}, {
		name: "an empty version is never stale",
		ops:  []op{replaced(vm1, "", "1"), check(vm1, "")},
		want: []bool{false},
	}, {
		name: "Forget drops the record",
		ops:  []op{replaced(vm1, "1", "2"), replaced(vm2, "1", "2"), forget(vm1), check(vm1, "1")},
		want: []bool{false}, wantLen: 1,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var g stale.Guard
			var got []bool
			for _, o := range tt.ops {
				switch {
				case o.forget:
					g.Forget(o.key)
				case o.replaced != [2]string{}:
					g.Replaced(o.key, o.replaced[0], o.replaced[1])
				default:
					got = append(got, g.Stale(o.key, o.stale))
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Stale results (-want +got):\n%s", diff)
			}
			if g.Len() != tt.wantLen {
				t.Errorf("records left: %d, want %d", g.Len(), tt.wantLen)
			}
		})
	}
}

func TestGuardConcurrent(t *testing.T) {
	var g stale.Guard
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := types.NamespacedName{Namespace: "ns", Name: string(rune('a' + i))}
			for range 100 {
				g.Replaced(key, "1", "2")
				if !g.Stale(key, "1") {
					t.Errorf("%s: version 1 not stale after our write", key)
				}
				g.Forget(key)
			}
		}()
	}
	wg.Wait()
	if g.Len() != 0 {
		t.Errorf("records left: %d", g.Len())
	}
}

package registry

import (
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPaginate(t *testing.T) {
	list := []string{"a", "b", "c", "d"}
	for _, tc := range []struct {
		query string
		page  []string
		next  string
	}{
		{"", list, ""},
		{"n=2", []string{"a", "b"}, "b"},
		{"n=2&last=b", []string{"c", "d"}, ""},
		{"n=1&last=b", []string{"c"}, "c"},
		{"last=d", []string{}, ""},
		{"n=10", list, ""},
		{"n=x", list, ""},
	} {
		q, _ := url.ParseQuery(tc.query)
		page, next := paginate(list, q)
		if diff := cmp.Diff(tc.page, page); diff != "" || next != tc.next {
			t.Errorf("paginate(%q): next %q (want %q), page (-want +got):\n%s", tc.query, next, tc.next, diff)
		}
	}
}

func TestSplitRefName(t *testing.T) {
	type split struct {
		Repo, Tag, Digest string
		OK                bool
	}
	for in, want := range map[string]split{
		"vm/disk:v1":           {"vm/disk", "v1", "", true},
		"vm/disk@sha256:0123":  {"vm/disk", "", "sha256:0123", true},
		"host:5000/vm/disk:v1": {"host:5000/vm/disk", "v1", "", true},
		"latest":               {"", "", "", false},
		"host:5000/vm/disk":    {"", "", "", false},
	} {
		var got split
		got.Repo, got.Tag, got.Digest, got.OK = splitRefName(in)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("splitRefName(%q) (-want +got):\n%s", in, diff)
		}
	}
}

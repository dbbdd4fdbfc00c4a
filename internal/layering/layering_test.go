package layering

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// pkg is what the test reads of `go list -json`.
type pkg struct {
	ImportPath string
	Name       string
	GoFiles    []string
	CgoFiles   []string
	Imports    []string
	Deps       []string
	Error      *struct{ Err string }
}

// list runs `go list -e -json` over the whole module for goos.
func list(t *testing.T, goos string) map[string]*pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-json", "./...")
	cmd.Dir = moduleRoot(t)
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH=amd64", "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list (GOOS=%s): %v\n%s", goos, err, stderr.String())
	}
	pkgs := map[string]*pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		p := &pkg{}
		if err := dec.Decode(p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("go list (GOOS=%s): decoding: %v", goos, err)
		}
		pkgs[p.ImportPath] = p
	}
	if len(pkgs) == 0 {
		t.Fatalf("go list (GOOS=%s) listed no packages", goos)
	}
	return pkgs
}

// moduleRoot is the folder of the module's go.mod, above this package.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's folder")
		}
		dir = parent
	}
}

// rel is path below Module ("" for Module itself); ok is false outside it.
func rel(path string) (string, bool) {
	if path == Module {
		return "", true
	}
	r, ok := strings.CutPrefix(path, Module+"/")
	return r, ok
}

// under tells whether the module-relative path p is prefix or below it.
func under(p, prefix string) bool {
	return prefix == "" || p == prefix || strings.HasPrefix(p, prefix+"/")
}

func TestRules(t *testing.T) {
	for _, b := range checkRules(list(t, "linux"), Rules) {
		t.Error(b)
	}
}

// checkRules lists how pkgs break rules.
func checkRules(pkgs map[string]*pkg, rules []Rule) []string {
	var broken []string
	for _, p := range sortedPkgs(pkgs) {
		from, ok := rel(p.ImportPath)
		if !ok {
			continue
		}
		for _, r := range rules {
			if !under(from, r.From) {
				continue
			}
			for _, d := range p.Deps {
				to, ok := rel(d)
				if !ok {
					continue
				}
				if slices.ContainsFunc(r.Allowed, func(a string) bool { return under(to, a) }) {
					continue
				}
				for _, f := range r.Forbidden {
					if under(to, f) && !under(from, f) {
						broken = append(broken, fmt.Sprintf("%s depends on %s: %s", from, to, r.Why))
					}
				}
			}
		}
	}
	return broken
}

func TestNothingImportsAMainPackage(t *testing.T) {
	for _, b := range checkMains(list(t, "linux")) {
		t.Error(b)
	}
}

// checkMains lists the imports of programs.
func checkMains(pkgs map[string]*pkg) []string {
	var broken []string
	for _, p := range sortedPkgs(pkgs) {
		for _, d := range p.Imports {
			if q, ok := pkgs[d]; ok && q.Name == "main" {
				broken = append(broken, fmt.Sprintf("%s imports %s, a program", p.ImportPath, d))
			}
		}
	}
	return broken
}

func TestPurePackagesAreNotLinuxOnly(t *testing.T) {
	linux := list(t, "linux")
	linuxOnly := map[string]bool{}
	for _, x := range LinuxOnly {
		linuxOnly[x] = true
	}
	// The module's packages that have no files for another GOOS.
	for _, goos := range []string{"windows", "darwin"} {
		for path, p := range list(t, goos) {
			if _, ok := rel(path); ok && len(p.GoFiles)+len(p.CgoFiles) == 0 {
				linuxOnly[path] = true
			}
		}
	}
	for _, b := range checkPure(linux, linuxOnly, Pure) {
		t.Error(b)
	}
}

// checkPure lists how the pure packages depend on Linux-only ones: a
// module package in linuxOnly, or a module package that imports an outside
// package in linuxOnly.
func checkPure(linux map[string]*pkg, linuxOnly map[string]bool, pure []string) []string {
	var broken []string
	for _, name := range pure {
		path := Module + "/" + name
		p, ok := linux[path]
		if !ok {
			broken = append(broken, fmt.Sprintf("pure package %s is not in the module", name))
			continue
		}
		if p.Error != nil {
			broken = append(broken, fmt.Sprintf("pure package %s: %s", name, p.Error.Err))
			continue
		}
		if len(p.CgoFiles) > 0 {
			broken = append(broken, fmt.Sprintf("pure package %s has cgo files %v", name, p.CgoFiles))
		}
		for _, d := range append([]string{path}, p.Deps...) {
			if !inModule(d) {
				continue
			}
			if d != path && linuxOnly[d] {
				broken = append(broken, fmt.Sprintf("pure package %s depends on %s, which builds only on Linux", name, d))
			}
			q := linux[d]
			if q == nil {
				continue
			}
			for _, i := range q.Imports {
				if linuxOnly[i] && !inModule(i) {
					broken = append(broken, fmt.Sprintf("pure package %s depends on %s, which imports the Linux-only %s", name, d, i))
				}
			}
		}
	}
	return broken
}

func inModule(path string) bool { _, ok := rel(path); return ok }

func sortedPkgs(m map[string]*pkg) []*pkg {
	out := make([]*pkg, 0, len(m))
	for _, p := range m {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ImportPath < out[j].ImportPath })
	return out
}

// TestRulesNameRealPackages keeps the rules honest: a rule about a folder
// that holds no package checks nothing.
func TestRulesNameRealPackages(t *testing.T) {
	pkgs := list(t, "linux")
	var rels []string
	for path := range pkgs {
		if r, ok := rel(path); ok {
			rels = append(rels, r)
		}
	}
	exists := func(prefix string) bool {
		return slices.ContainsFunc(rels, func(r string) bool { return under(r, prefix) })
	}
	for _, r := range Rules {
		if !exists(r.From) {
			t.Errorf("rule for %q: no package there", r.From)
		}
	}
	for _, p := range Pure {
		if !exists(p) {
			t.Errorf("pure %q: no package there", p)
		}
	}
}

// The checks find what they are for: a synthetic tree that breaks each rule.
func TestChecksFindViolations(t *testing.T) {
	m := func(r string) string { return Module + "/" + r }
	pkgs := map[string]*pkg{
		m("virt/domain"):                 {ImportPath: m("virt/domain"), Name: "domain", GoFiles: []string{"a.go"}, Deps: []string{m("virt/network"), m("controllers/vmi")}, Imports: []string{m("virt/network")}},
		m("virt/network"):                {ImportPath: m("virt/network"), Name: "network", GoFiles: []string{"a.go"}, Imports: []string{"github.com/vishvananda/netlink"}},
		m("virt/network/netns"):          {ImportPath: m("virt/network/netns"), Name: "netns", GoFiles: []string{"a_linux.go"}},
		m("controllers/vmi"):             {ImportPath: m("controllers/vmi"), Name: "vmi", GoFiles: []string{"a.go"}, Deps: []string{m("daemons/virt-handler")}, Imports: []string{m("daemons/virt-handler")}},
		m("daemons/virt-handler"):        {ImportPath: m("daemons/virt-handler"), Name: "main", GoFiles: []string{"main.go"}},
		m("virt/storage"):                {ImportPath: m("virt/storage"), Name: "storage", GoFiles: []string{"a.go"}, Deps: []string{m("virt/network/netns")}},
		m("virt/spec"):                   {ImportPath: m("virt/spec"), Name: "spec", GoFiles: []string{"a.go"}},
		"github.com/vishvananda/netlink": {ImportPath: "github.com/vishvananda/netlink", Name: "netlink"},
	}
	rules := []Rule{
		{From: "virt", Forbidden: []string{"controllers"}, Allowed: []string{"controllers/vmi/allowed"}, Why: "virt below controllers"},
		{From: "", Forbidden: []string{"daemons"}, Why: "programs"},
	}
	got := checkRules(pkgs, rules)
	want := []string{
		"controllers/vmi depends on daemons/virt-handler: programs",
		"virt/domain depends on controllers/vmi: virt below controllers",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("checkRules (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{m("controllers/vmi") + " imports " + m("daemons/virt-handler") + ", a program"}, checkMains(pkgs)); diff != "" {
		t.Errorf("checkMains (-want +got):\n%s", diff)
	}
	linuxOnly := map[string]bool{"github.com/vishvananda/netlink": true, m("virt/network/netns"): true}
	gotPure := checkPure(pkgs, linuxOnly, []string{"virt/domain", "virt/storage", "virt/spec", "virt/missing"})
	wantPure := []string{
		"pure package virt/domain depends on " + m("virt/network") + ", which imports the Linux-only github.com/vishvananda/netlink",
		"pure package virt/storage depends on " + m("virt/network/netns") + ", which builds only on Linux",
		"pure package virt/missing is not in the module",
	}
	if diff := cmp.Diff(wantPure, gotPure); diff != "" {
		t.Errorf("checkPure (-want +got):\n%s", diff)
	}
}

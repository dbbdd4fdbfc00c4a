// Package layering holds the tree's dependency rules as data ([Rules],
// [Pure], [LinuxOnly]) and a test that checks every package of the module
// against them with `go list`, so that a change that makes a package climb
// back up the tree, or makes a pure package Linux-only, fails `make test`.
//
// The rules, from the bottom up: virt/spec; virt/storage and virt/network;
// virt/domain; virt/migrate and the virt front door; controllers/ and
// virtapi/; daemons/ on top; cmd/virtctl apart, speaking only the API.
// Nothing under virt/ imports controllers/, virtapi/, daemons/, local/ or a
// test helper; nothing imports a daemon's package; the pure packages build
// on every GOOS (`make check-pure` compiles them for darwin and windows).
package layering

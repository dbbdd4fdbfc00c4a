//go:build linux

package confined_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/virtkit/virtkit/virt/confined"
)

// A node daemon reads a launcher's exit file and connects to its serial
// console in the folder it shares with the launcher pod. Neither may be a
// link, and the file is read only up to a bound.
func Example() {
	folder, _ := os.MkdirTemp("", "launcher")
	defer os.RemoveAll(folder)
	os.WriteFile(filepath.Join(folder, "exit"), []byte(`{"code":0}`), 0o644)
	ln, _ := net.Listen("unix", filepath.Join(folder, "serial0"))
	defer ln.Close()
	os.Symlink("/run/containerd/containerd.sock", filepath.Join(folder, "vnc"))

	r, err := confined.Open(folder, confined.NoSymlinks)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()

	b, err := r.ReadFile("exit", 64<<10)
	fmt.Printf("%s %v\n", b, err)

	if c, err := r.DialUnix(context.Background(), "serial0"); err == nil {
		fmt.Println("console connected")
		c.Close()
	}
	if _, err := r.DialUnix(context.Background(), "vnc"); err != nil {
		fmt.Println("vnc refused: a link")
	}
	// Output:
	// {"code":0} <nil>
	// console connected
	// vnc refused: a link
}

// Command purelist prints the packages that must build on every GOOS
// without cgo (internal/layering.Pure), one ./relative/path a line, for
// `make check-pure`: the list has one home, the layering rules.
package main

import (
	"fmt"

	"github.com/virtkit/virtkit/internal/layering"
)

func main() {
	for _, p := range layering.Pure {
		fmt.Println("./" + p)
	}
}

package token_test

import (
	"regexp"
	"testing"

	"github.com/virtkit/virtkit/virt/storage/export/token"
)

func TestNew(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		tok, err := token.New()
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`^[0-9A-Za-z]{20}$`).MatchString(tok) {
			t.Fatalf("token %q: want 20 letters and digits", tok)
		}
		if seen[tok] {
			t.Fatalf("token %q twice", tok)
		}
		seen[tok] = true
	}
}

// Package token is the rule of a VirtualMachineExport's token, which the
// export server checks and clients send: the header (and query
// parameter) it travels in, its key in its Secret, and how a new one is
// made (KubeVirt's: 20 letters and digits). It has no dependency, so
// that clients such as virtctl share the rule with the server.
package token

import (
	"crypto/rand"
	"fmt"
)

// Header is the header (and the query parameter) a client sends the
// export's token in.
const Header = "x-kubevirt-export-token"

// Key is the key of the token in its Secret.
const Key = "token"

// length and alphabet are KubeVirt's export token's: 20 letters and
// digits.
const (
	length   = 20
	alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
)

// New returns a new random export token.
func New() (string, error) {
	b := make([]byte, length)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("export token: %w", err)
	}
	for i := range b {
		// 256 is not a multiple of 62: the first letters come a little
		// more often, which leaves well over 100 bits of entropy.
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b), nil
}

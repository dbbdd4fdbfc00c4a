package export

import (
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
)

// tokenLength and tokenAlphabet are KubeVirt's export token's: 20 letters
// and digits.
const (
	tokenLength   = 20
	tokenAlphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
)

// maxToken bounds the token file a server reads.
const maxToken = 4 << 10

// NewToken returns a new random export token, as KubeVirt makes them.
func NewToken() (string, error) {
	b := make([]byte, tokenLength)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("export token: %w", err)
	}
	for i := range b {
		// 256 is not a multiple of 62: the first letters come a little
		// more often, which leaves well over 100 bits of entropy.
		b[i] = tokenAlphabet[int(b[i])%len(tokenAlphabet)]
	}
	return string(b), nil
}

// errNoToken: the token file is empty.
var errNoToken = errors.New("the token file is empty")

// readToken reads the token file, at most maxToken bytes. The file is the
// kubelet's (a Secret volume), not the user's: its links are followed.
func readToken(name string) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxToken+1))
	switch {
	case err != nil:
		return "", err
	case len(b) > maxToken:
		return "", fmt.Errorf("%s: longer than %d bytes", name, maxToken)
	case len(b) == 0:
		return "", fmt.Errorf("%s: %w", name, errNoToken)
	}
	return string(b), nil
}

// authorized reports whether r carries token, in the query parameter or
// the header (the parameter first, as KubeVirt's server looks).
func authorized(r *http.Request, token string) bool {
	given := r.URL.Query().Get(TokenHeader)
	if given == "" {
		given = r.Header.Get(TokenHeader)
	}
	return given != "" && subtle.ConstantTimeCompare([]byte(given), []byte(token)) == 1
}

package export

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/virtkit/virtkit/virt/storage/export/token"
)

// maxToken bounds the token file a server reads.
const maxToken = 4 << 10

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
func authorized(r *http.Request, want string) bool {
	given := r.URL.Query().Get(token.Header)
	if given == "" {
		given = r.Header.Get(token.Header)
	}
	return given != "" && subtle.ConstantTimeCompare([]byte(given), []byte(want)) == 1
}

package upload_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/virtkit/virtkit/virt/storage/upload"
)

// An UploadTokenRequest is answered with a token for one claim; the proxy
// verifies it with the issuer's public key before it streams the upload.
func Example() {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	now := time.Unix(1_800_000_000, 0)
	tok, _ := upload.Issue(key, upload.Claims{Namespace: "default", Claim: "fedora", Expires: now.Add(upload.TokenLifetime)})

	c, err := upload.Verify(key.Public(), tok, now.Add(time.Minute))
	fmt.Println(c.Namespace, c.Claim, err)
	_, err = upload.Verify(key.Public(), tok, now.Add(10*time.Minute))
	fmt.Println(err)
	// Output:
	// default fedora <nil>
	// invalid upload token: expired at 2027-01-15T08:05:00Z
}

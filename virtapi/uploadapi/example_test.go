package uploadapi_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/virtkit/virtkit/virtapi/frontproxy"
	"github.com/virtkit/virtkit/virtapi/subresources"
	"github.com/virtkit/virtkit/virtapi/uploadapi"
)

type allowAll struct{}

func (allowAll) Authorize(context.Context, frontproxy.User, subresources.Attributes) (bool, string, error) {
	return true, "", nil
}

// KubeVirt's virtctl creates an UploadTokenRequest through the apiserver,
// which forwards it to virt-api; the answer carries the token it then
// presents to the upload proxy.
func Example() {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	s := uploadapi.NewTokenServer(func() (crypto.Signer, error) { return key, nil }, user("alice"), allowAll{})
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("POST", uploadapi.Prefix+"/namespaces/default/uploadtokenrequests",
		strings.NewReader(`{"spec":{"pvcName":"fedora"}}`)))
	fmt.Println(rec.Code, strings.Contains(rec.Body.String(), `"token":"vkup1.`))
	// Output: 201 true
}

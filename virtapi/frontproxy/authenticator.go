package frontproxy

import (
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// User is who a call comes from, as the aggregator vouches for it.
type User struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// Authenticator trusts the identity headers the Kubernetes aggregator adds
// (X-Remote-User, X-Remote-Group, X-Remote-Extra-*), but only on a request
// whose TLS client certificate was signed by the request-header client CA and,
// when AllowedNames is set, whose common name is one of them: the rules of
// the apiserver's --requestheader-* flags. Anyone else could set the headers.
type Authenticator struct {
	// ClientCA verifies the aggregator's client certificate
	// (--requestheader-client-ca-file).
	ClientCA *x509.CertPool
	// AllowedNames are the common names accepted (--requestheader-allowed-names);
	// empty accepts any certificate ClientCA signed.
	AllowedNames []string
	// UsernameHeaders, GroupHeaders and ExtraHeaderPrefixes name the headers;
	// empty means X-Remote-User, X-Remote-Group and X-Remote-Extra-.
	UsernameHeaders     []string
	GroupHeaders        []string
	ExtraHeaderPrefixes []string
}

// VerifyCaller checks that r came from the apiserver itself: over TLS,
// with a client certificate ClientCA signed for client authentication
// and, when AllowedNames is set, with one of those common names. The
// identity headers are not read.
func (f *Authenticator) VerifyCaller(r *http.Request) error {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return errors.New("no client certificate")
	}
	if f.ClientCA == nil {
		return errors.New("no request-header client CA configured")
	}
	leaf := r.TLS.PeerCertificates[0]
	inter := x509.NewCertPool()
	for _, c := range r.TLS.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: f.ClientCA, Intermediates: inter,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return fmt.Errorf("client certificate %q is not signed by the request-header client CA: %w", leaf.Subject.CommonName, err)
	}
	if len(f.AllowedNames) > 0 && !slices.Contains(f.AllowedNames, leaf.Subject.CommonName) {
		return fmt.Errorf("client certificate common name %q is not one of the allowed names %v", leaf.Subject.CommonName, f.AllowedNames)
	}
	return nil
}

// Authenticate returns the user the identity headers of r name, once
// [Authenticator.VerifyCaller] has accepted r's client certificate: the
// first non-empty user header, every group header's values and, for each
// extra header, its unescaped, lower-cased key.
func (f *Authenticator) Authenticate(r *http.Request) (User, error) {
	if err := f.VerifyCaller(r); err != nil {
		return User{}, err
	}
	u := User{}
	for _, h := range orDefault(f.UsernameHeaders, "X-Remote-User") {
		if v := r.Header.Get(h); v != "" {
			u.Name = v
			break
		}
	}
	if u.Name == "" {
		return User{}, fmt.Errorf("the front proxy sent no user header (%v)", orDefault(f.UsernameHeaders, "X-Remote-User"))
	}
	for _, h := range orDefault(f.GroupHeaders, "X-Remote-Group") {
		u.Groups = append(u.Groups, r.Header.Values(h)...)
	}
	for _, prefix := range orDefault(f.ExtraHeaderPrefixes, "X-Remote-Extra-") {
		for k, vs := range r.Header {
			if len(k) <= len(prefix) || !strings.EqualFold(k[:len(prefix)], prefix) {
				continue
			}
			key := strings.ToLower(k[len(prefix):])
			if unescaped, err := url.PathUnescape(key); err == nil {
				key = unescaped
			}
			if u.Extra == nil {
				u.Extra = map[string][]string{}
			}
			u.Extra[key] = append(u.Extra[key], vs...)
		}
	}
	return u, nil
}

func orDefault(v []string, def string) []string {
	if len(v) == 0 {
		return []string{def}
	}
	return v
}

// Where the apiserver publishes its front-proxy settings for extension API
// servers (readable with the extension-apiserver-authentication-reader Role).
const (
	ConfigMapNamespace = "kube-system"
	ConfigMapName      = "extension-apiserver-authentication"
)

// FromConfigMap builds an Authenticator from the data of the ConfigMap
// the apiserver publishes ([ConfigMapNamespace]/[ConfigMapName]), as
// k8s.io/apiserver's delegated authentication reads it. Errors name the
// data key.
func FromConfigMap(data map[string]string) (*Authenticator, error) {
	caPEM := data["requestheader-client-ca-file"]
	if caPEM == "" {
		return nil, errors.New("data.requestheader-client-ca-file is empty: start kube-apiserver with --requestheader-client-ca-file")
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(caPEM)) {
		return nil, errors.New("data.requestheader-client-ca-file: no PEM certificate")
	}
	f := &Authenticator{ClientCA: pool}
	for field, dst := range map[string]*[]string{
		"requestheader-allowed-names":        &f.AllowedNames,
		"requestheader-username-headers":     &f.UsernameHeaders,
		"requestheader-group-headers":        &f.GroupHeaders,
		"requestheader-extra-headers-prefix": &f.ExtraHeaderPrefixes,
	} {
		if v := data[field]; v != "" {
			if err := json.Unmarshal([]byte(v), dst); err != nil {
				return nil, fmt.Errorf("data.%s: %w", field, err)
			}
		}
	}
	return f, nil
}

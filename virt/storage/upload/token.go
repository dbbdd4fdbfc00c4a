package upload

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// TokenLifetime is how long an issued token is accepted, as CDI's.
const TokenLifetime = 5 * time.Minute

// maxToken bounds the length of a token Verify reads.
const maxToken = 4096

// tokenPrefix versions the format; tokenContext separates its signatures
// from any other the key makes.
const (
	tokenPrefix  = "vkup1."
	tokenContext = "virtkit upload token\x00"
)

// Claims are what a token grants: an upload into one claim of one
// namespace until Expires.
type Claims struct {
	Namespace, Claim string
	// Expires is kept to the second.
	Expires time.Time
}

// payload is Claims on the wire.
type payload struct {
	Namespace string `json:"ns"`
	Claim     string `json:"pvc"`
	Expires   int64  `json:"exp"`
}

// ErrInvalidToken is wrapped by every error of Verify.
var ErrInvalidToken = errors.New("invalid upload token")

// Issue returns a token for c signed with key (ECDSA, RSA or Ed25519).
func Issue(key crypto.Signer, c Claims) (string, error) {
	if c.Namespace == "" || c.Claim == "" {
		return "", errors.New("upload token: namespace and claim are required")
	}
	raw, err := json.Marshal(payload{Namespace: c.Namespace, Claim: c.Claim, Expires: c.Expires.Unix()})
	if err != nil {
		return "", err
	}
	body := base64.RawURLEncoding.EncodeToString(raw)
	sig, err := sign(key, []byte(tokenContext+body))
	if err != nil {
		return "", fmt.Errorf("signing the upload token: %w", err)
	}
	return tokenPrefix + body + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}

// Verify returns the claims of token if pub signed it and it has not
// expired at now.
func Verify(pub crypto.PublicKey, token string, now time.Time) (Claims, error) {
	if len(token) > maxToken {
		return Claims{}, fmt.Errorf("%w: longer than %d bytes", ErrInvalidToken, maxToken)
	}
	rest, ok := strings.CutPrefix(token, tokenPrefix)
	body, sig64, ok2 := strings.Cut(rest, ".")
	if !ok || !ok2 {
		return Claims{}, fmt.Errorf("%w: not a virtkit upload token", ErrInvalidToken)
	}
	sig, err := base64.RawURLEncoding.DecodeString(sig64)
	if err != nil {
		return Claims{}, fmt.Errorf("%w: signature: %w", ErrInvalidToken, err)
	}
	if err := verify(pub, []byte(tokenContext+body), sig); err != nil {
		return Claims{}, fmt.Errorf("%w: %w", ErrInvalidToken, err)
	}
	raw, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil {
		return Claims{}, fmt.Errorf("%w: payload: %w", ErrInvalidToken, err)
	}
	var p payload
	if err := json.Unmarshal(raw, &p); err != nil {
		return Claims{}, fmt.Errorf("%w: payload: %w", ErrInvalidToken, err)
	}
	c := Claims{Namespace: p.Namespace, Claim: p.Claim, Expires: time.Unix(p.Expires, 0)}
	if !now.Before(c.Expires) {
		return Claims{}, fmt.Errorf("%w: expired at %s", ErrInvalidToken, c.Expires.UTC().Format(time.RFC3339))
	}
	if c.Namespace == "" || c.Claim == "" {
		return Claims{}, fmt.Errorf("%w: no claim named", ErrInvalidToken)
	}
	return c, nil
}

func sign(key crypto.Signer, msg []byte) ([]byte, error) {
	if _, ok := key.Public().(ed25519.PublicKey); ok {
		return key.Sign(rand.Reader, msg, crypto.Hash(0))
	}
	d := sha256.Sum256(msg)
	return key.Sign(rand.Reader, d[:], crypto.SHA256)
}

func verify(pub crypto.PublicKey, msg, sig []byte) error {
	ok := false
	switch k := pub.(type) {
	case ed25519.PublicKey:
		ok = ed25519.Verify(k, msg, sig)
	case *ecdsa.PublicKey:
		d := sha256.Sum256(msg)
		ok = ecdsa.VerifyASN1(k, d[:], sig)
	case *rsa.PublicKey:
		d := sha256.Sum256(msg)
		ok = rsa.VerifyPKCS1v15(k, crypto.SHA256, d[:], sig) == nil
	default:
		return fmt.Errorf("keys of type %T are not supported", pub)
	}
	if !ok {
		return errors.New("bad signature")
	}
	return nil
}

package upload_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/virtkit/virtkit/virt/storage/upload"
)

func keys(t *testing.T) map[string]crypto.Signer {
	t.Helper()
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	_, ed, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]crypto.Signer{"ecdsa": ec, "rsa": rk, "ed25519": ed}
}

func TestTokenRoundTrip(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	want := upload.Claims{Namespace: "ns", Claim: "disk", Expires: now.Add(upload.TokenLifetime)}
	for name, key := range keys(t) {
		t.Run(name, func(t *testing.T) {
			tok, err := upload.Issue(key, want)
			if err != nil {
				t.Fatal(err)
			}
			got, err := upload.Verify(key.Public(), tok, now)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("claims (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVerifyRefuses(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	ks := keys(t)
	key, other := ks["ecdsa"], ks["ed25519"]
	good, err := upload.Issue(key, upload.Claims{Namespace: "ns", Claim: "disk", Expires: now.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	forged, err := upload.Issue(other, upload.Claims{Namespace: "ns", Claim: "other-disk", Expires: now.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	body, sig, _ := strings.Cut(strings.TrimPrefix(good, "vkup1."), ".")
	otherBody, _, _ := strings.Cut(strings.TrimPrefix(forged, "vkup1."), ".")
	for _, tc := range []struct {
		name, token, want string
		at                time.Time
	}{
		{"expired", good, "expired at", now.Add(time.Minute)},
		{"other key", forged, "bad signature", now},
		{"body swapped", "vkup1." + otherBody + "." + sig, "bad signature", now},
		{"not a token", "Bearer x", "not a virtkit upload token", now},
		{"no signature", "vkup1." + body, "not a virtkit upload token", now},
		{"too long", "vkup1." + strings.Repeat("a", 5000) + ".b", "longer than", now},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := upload.Verify(key.Public(), tc.token, tc.at)
			if !errors.Is(err, upload.ErrInvalidToken) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Verify: %v, want ErrInvalidToken saying %q", err, tc.want)
			}
		})
	}
}

func TestIssueNeedsAClaim(t *testing.T) {
	if _, err := upload.Issue(keys(t)["ecdsa"], upload.Claims{Namespace: "ns"}); err == nil {
		t.Fatal("Issue without a claim: no error")
	}
}

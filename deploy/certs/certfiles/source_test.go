package certfiles_test

import (
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/virtkit/virtkit/deploy/certs"
	"github.com/virtkit/virtkit/deploy/certs/certfiles"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// files writes a pair and a bundle into dir.
func files(t *testing.T, dir string, p *certs.Pair, bundle []byte) (cert, key, ca string) {
	t.Helper()
	cert, key, ca = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), filepath.Join(dir, "ca.crt")
	for f, b := range map[string][]byte{cert: p.CertPEM(), key: p.KeyPEM(), ca: bundle} {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return cert, key, ca
}

// handshake runs one TLS handshake between the two configs and returns
// the serial of the server's and the client's certificates as each peer
// saw them.
func handshake(t *testing.T, server, client *tls.Config) (serverSerial, clientSerial string, err error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type result struct {
		serial string
		err    error
	}
	done := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- result{err: err}
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		srv := tls.Server(c, server)
		if err := srv.Handshake(); err != nil {
			done <- result{err: err}
			return
		}
		done <- result{serial: srv.ConnectionState().PeerCertificates[0].SerialNumber.String()}
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	cl := tls.Client(conn, client)
	if err := cl.Handshake(); err != nil {
		return "", "", err
	}
	// TLS 1.3 checks the client's certificate after the client is done:
	// a read sees the server's verdict.
	r := <-done
	if r.err != nil {
		return "", "", r.err
	}
	return cl.ConnectionState().PeerCertificates[0].SerialNumber.String(), r.serial, nil
}

// A renewed certificate and a new CA reach new handshakes once the
// interval has passed, without a new Source.
func TestRenewedFilesReachNewHandshakes(t *testing.T) {
	now := time.Now()
	clk := &clock{now}
	ca1, err := certs.NewCA("ca1", now, 48*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	issue := func(ca *certs.Pair, r certs.Request) *certs.Pair {
		p, err := ca.Issue(r, now)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	serverReq := certs.Request{CommonName: "handler", DNSNames: []string{"virt-handler.kubevirt.svc"}, Server: true, Validity: 24 * time.Hour}
	clientReq := certs.Request{CommonName: "virt-api", Client: true, Validity: 24 * time.Hour}
	sdir, cdir := t.TempDir(), t.TempDir()
	s1, c1 := issue(ca1, serverReq), issue(ca1, clientReq)
	sc, sk, sca := files(t, sdir, s1, ca1.CertPEM())
	cc, ck, cca := files(t, cdir, c1, ca1.CertPEM())
	server, err := certfiles.New(sc, sk, sca, certfiles.WithClock(clk.now), certfiles.WithInterval(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	client, err := certfiles.New(cc, ck, cca, certfiles.WithClock(clk.now), certfiles.WithInterval(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := client.ClientConfig("virt-handler.kubevirt.svc")
	if err != nil {
		t.Fatal(err)
	}
	gotS, gotC, err := handshake(t, server.ServerConfig(), cfg)
	if err != nil || gotS != s1.Cert.SerialNumber.String() || gotC != c1.Cert.SerialNumber.String() {
		t.Fatalf("first handshake: %s %s %v", gotS, gotC, err)
	}

	// A new CA: both sides get new certificates and the bundle of both CAs.
	ca2, err := certs.NewCA("ca2", now, 48*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	bundle := append(ca2.CertPEM(), ca1.CertPEM()...)
	s2, c2 := issue(ca2, serverReq), issue(ca2, clientReq)
	files(t, sdir, s2, bundle)
	files(t, cdir, c2, bundle)
	gotS, _, err = handshake(t, server.ServerConfig(), cfg)
	if err != nil || gotS != s1.Cert.SerialNumber.String() {
		t.Fatalf("within the interval, the old certificate: got %s, %v", gotS, err)
	}
	clk.t = now.Add(2 * time.Minute)
	gotS, gotC, err = handshake(t, server.ServerConfig(), cfg)
	if err != nil || gotS != s2.Cert.SerialNumber.String() || gotC != c2.Cert.SerialNumber.String() {
		t.Fatalf("after the interval: %s %s %v; want the renewed certificates", gotS, gotC, err)
	}

	// A broken file keeps the last good certificate.
	if err := os.WriteFile(sc, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	clk.t = now.Add(4 * time.Minute)
	if gotS, _, err = handshake(t, server.ServerConfig(), cfg); err != nil || gotS != s2.Cert.SerialNumber.String() {
		t.Fatalf("with a broken file: %s %v; want the last good certificate", gotS, err)
	}
}

// The client checks the name it was given, and a CA it does not hold.
func TestClientRefusesWrongNameOrCA(t *testing.T) {
	now := time.Now()
	ca, _ := certs.NewCA("ca", now, 48*time.Hour)
	other, _ := certs.NewCA("other", now, 48*time.Hour)
	srvPair, err := ca.Issue(certs.Request{CommonName: "h", DNSNames: []string{"virt-handler.kubevirt.svc"}, Server: true, Validity: 24 * time.Hour}, now)
	if err != nil {
		t.Fatal(err)
	}
	cliPair, err := ca.Issue(certs.Request{CommonName: "c", Client: true, Validity: 24 * time.Hour}, now)
	if err != nil {
		t.Fatal(err)
	}
	sc, sk, _ := files(t, t.TempDir(), srvPair, ca.CertPEM())
	server, err := certfiles.New(sc, sk, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, serverName string
		bundle           []byte
		want             string
	}{
		{"wrong name", "virt-handler.other.svc", ca.CertPEM(), "virt-handler.other.svc"},
		{"foreign CA", "virt-handler.kubevirt.svc", other.CertPEM(), "unknown authority"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc, ck, cca := files(t, t.TempDir(), cliPair, tc.bundle)
			client, err := certfiles.New(cc, ck, cca)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := client.ClientConfig(tc.serverName)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := handshake(t, server.ServerConfig(), cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("handshake = %v, want refused with %q", err, tc.want)
			}
		})
	}
	cc, ck, cca := files(t, t.TempDir(), cliPair, ca.CertPEM())
	client, _ := certfiles.New(cc, ck, cca)
	if _, err := client.ClientConfig(""); err == nil {
		t.Error("a client with a CA bundle and no server name was made")
	}
}

func TestNewRefusesBadFiles(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, 2<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ cert, key, want string }{
		{"", "", "a certificate and a key file are required"},
		{filepath.Join(dir, "missing"), filepath.Join(dir, "missing"), "no such file"},
		{big, big, "larger than"},
	} {
		if _, err := certfiles.New(tc.cert, tc.key, ""); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%q) = %v, want %q", tc.cert, err, tc.want)
		}
	}
}

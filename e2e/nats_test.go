package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/internal/testutil"
	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/queue/queuetest"
)

// pki is a throw-away CA with a server certificate for 127.0.0.1 and a client certificate.
type pki struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey string
}

func newPKI(t *testing.T) pki {
	t.Helper()
	dir := t.TempDir()
	caKey, caDER := selfSigned(t)
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	p := pki{CA: writePEM(t, dir, "ca.pem", "CERTIFICATE", caDER)}
	p.ServerCert, p.ServerKey = leaf(t, dir, "server", ca, caKey, x509.ExtKeyUsageServerAuth)
	p.ClientCert, p.ClientKey = leaf(t, dir, "client", ca, caKey, x509.ExtKeyUsageClientAuth)
	return p
}

func selfSigned(t *testing.T) (*ecdsa.PrivateKey, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "skillfleet e2e CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return key, der
}

func leaf(t *testing.T, dir, name string, ca *x509.Certificate, caKey *ecdsa.PrivateKey, usage x509.ExtKeyUsage) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return writePEM(t, dir, name+".pem", "CERTIFICATE", der), writePEM(t, dir, name+"-key.pem", "EC PRIVATE KEY", kder)
}

func writePEM(t *testing.T, dir, name, typ string, der []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// natsServer is a nats-server process with JetStream that requires TLS with a client
// certificate (mutual TLS) and a token.
type natsServer struct {
	URL   string
	PKI   pki
	Token string
	proc  *proc
}

func startNATS(t *testing.T) *natsServer {
	t.Helper()
	dir := t.TempDir()
	s := &natsServer{PKI: newPKI(t), Token: "nats-e2e-token"}
	addr := testutil.FreeAddr(t)
	conf := fmt.Sprintf(`listen: %q
server_name: e2e
jetstream { store_dir: %q }
tls { cert_file: %q, key_file: %q, ca_file: %q, verify: true, timeout: 5 }
authorization { token: %q }
`, addr, filepath.Join(dir, "js"), s.PKI.ServerCert, s.PKI.ServerKey, s.PKI.CA, s.Token)
	s.proc = start(t, "nats-server", binary(t, "nats-server"), nil, "-c", writeFile(t, dir, "nats.conf", conf))
	s.URL = "tls://" + addr
	// Ready when a client with every credential gets JetStream answers.
	waitJetStream(t, queue.ConnectConfig{URL: s.URL, TLSCA: s.PKI.CA, TLSCert: s.PKI.ClientCert, TLSKey: s.PKI.ClientKey, Token: s.Token},
		30*time.Second, s.proc)
	return s
}

// waitJetStream waits until a client logged in as cfg gets JetStream answers, failing the test
// when within passes or one of the server processes procs exits first.
func waitJetStream(t *testing.T, cfg queue.ConnectConfig, within time.Duration, procs ...*proc) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := queuetest.JetStreamReady(ctx, cfg)
		cancel()
		if err == nil {
			return
		}
		for _, p := range procs {
			if !p.running() {
				t.Fatalf("%s exited with %d before serving JetStream: %v\n%s", p.name, p.code, err, p.out.String())
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("NATS at %s did not serve JetStream within %s: %v", cfg.URL, within, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// clientFlags are the NATS flags of a daemon holding every credential but the token, which
// callers pass by file or environment.
func (s *natsServer) clientFlags() []string {
	return []string{"--nats", s.URL, "--nats-tls-ca", s.PKI.CA, "--nats-tls-cert", s.PKI.ClientCert, "--nats-tls-key", s.PKI.ClientKey}
}

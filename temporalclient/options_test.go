package temporalclient_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"

	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/payloadcodec"
	"github.com/encore-tickets/encore/temporalclient"
)

// pki is a throwaway CA with a server certificate for 127.0.0.1 and a
// client certificate, written as PEM files the way an operator mounts them.
type pki struct {
	ca                  *x509.CertPool
	server              tls.Certificate
	caFile, cert, key   string
	otherCert, otherKey string // signed by another CA
}

func newPKI(t *testing.T) pki {
	t.Helper()
	dir := t.TempDir()
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
		return p
	}
	newCA := func(name string) (*x509.Certificate, *ecdsa.PrivateKey, []byte) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		require.NoError(t, err)
		cert, err := x509.ParseCertificate(der)
		require.NoError(t, err)
		return cert, key, der
	}
	leaf := func(ca *x509.Certificate, caKey *ecdsa.PrivateKey, serial int64, usage x509.ExtKeyUsage) ([]byte, *ecdsa.PrivateKey) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "encore"},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"temporal.internal"}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		require.NoError(t, err)
		return der, key
	}
	keyDER := func(k *ecdsa.PrivateKey) []byte {
		b, err := x509.MarshalPKCS8PrivateKey(k)
		require.NoError(t, err)
		return b
	}

	ca, caKey, caDER := newCA("encore test CA")
	other, otherKey, _ := newCA("someone else's CA")
	var p pki
	p.ca = x509.NewCertPool()
	p.ca.AddCert(ca)
	p.caFile = write("ca.pem", "CERTIFICATE", caDER)
	srvDER, srvKey := leaf(ca, caKey, 2, x509.ExtKeyUsageServerAuth)
	var err error
	p.server, err = tls.X509KeyPair(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srvDER}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER(srvKey)}))
	require.NoError(t, err)
	cliDER, cliKey := leaf(ca, caKey, 3, x509.ExtKeyUsageClientAuth)
	p.cert, p.key = write("client.pem", "CERTIFICATE", cliDER), write("client-key.pem", "PRIVATE KEY", keyDER(cliKey))
	oDER, oKey := leaf(other, otherKey, 4, x509.ExtKeyUsageClientAuth)
	p.otherCert, p.otherKey = write("other.pem", "CERTIFICATE", oDER), write("other-key.pem", "PRIVATE KEY", keyDER(oKey))
	return p
}

// frontend stands in for Temporal's frontend: a gRPC server on loopback
// requiring a client certificate from the test CA, answering the one call a
// client makes when it connects and keeping the metadata it came with.
type frontend struct {
	workflowservice.UnimplementedWorkflowServiceServer
	mu   sync.Mutex
	seen []metadata.MD
}

func (f *frontend) GetSystemInfo(ctx context.Context, _ *workflowservice.GetSystemInfoRequest) (*workflowservice.GetSystemInfoResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	f.mu.Lock()
	f.seen = append(f.seen, md)
	f.mu.Unlock()
	return &workflowservice.GetSystemInfoResponse{}, nil
}

func (f *frontend) authorizations() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, md := range f.seen {
		out = append(out, md.Get("authorization")...)
	}
	return out
}

func serveFrontend(t *testing.T, p pki) (string, *frontend) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	f := &frontend{}
	s := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{
		Certificates: []tls.Certificate{p.server},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    p.ca,
		MinVersion:   tls.VersionTLS12,
	})))
	workflowservice.RegisterWorkflowServiceServer(s, f)
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(s.Stop)
	return ln.Addr().String(), f
}

func TestTheConfiguredClientConnectsOnlyOverMutualTLSAndSendsTheAPIKey(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	addr, fe := serveFrontend(t, p)
	cases := []struct {
		name    string
		set     func(c *config.Config)
		connect bool
	}{
		{"client certificate, CA and API key", func(c *config.Config) {
			c.TemporalTLSCA, c.TemporalTLSCert, c.TemporalTLSKey = p.caFile, p.cert, p.key
			c.TemporalAPIKey = "tc-api-key-1"
		}, true},
		{"by server name", func(c *config.Config) {
			c.TemporalTLSCA, c.TemporalTLSCert, c.TemporalTLSKey = p.caFile, p.cert, p.key
			c.TemporalTLSServerName = "temporal.internal"
		}, true},
		{"no client certificate", func(c *config.Config) { c.TemporalTLSCA = p.caFile }, false},
		{"a client certificate of another CA", func(c *config.Config) {
			c.TemporalTLSCA, c.TemporalTLSCert, c.TemporalTLSKey = p.caFile, p.otherCert, p.otherKey
		}, false},
		{"the system roots only", func(c *config.Config) { c.TemporalTLSCert, c.TemporalTLSKey = p.cert, p.key }, false},
		{"a server name the certificate lacks", func(c *config.Config) {
			c.TemporalTLSCA, c.TemporalTLSCert, c.TemporalTLSKey = p.caFile, p.cert, p.key
			c.TemporalTLSServerName = "elsewhere.internal"
		}, false},
		{"plain text", func(c *config.Config) {}, false},
	}
	// Serial: the check after the loop reads what the calls sent.
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			tc.set(&cfg)
			opts, err := temporalclient.Options(cfg, addr, nil)
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			c, err := client.DialContext(ctx, opts)
			if !tc.connect {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			c.Close()
		})
	}
	require.Equal(t, []string{"Bearer tc-api-key-1"}, fe.authorizations(), "the API key went with the call that set it, and only that one")
}

func TestAnAPIKeyAloneImpliesTLSExceptToLoopback(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	tlsConfig, err := temporalclient.TLS(cfg, "127.0.0.1:7233")
	require.NoError(t, err)
	require.Nil(t, tlsConfig, "the embedded development server speaks plain gRPC")
	cfg.TemporalAPIKey = "k"
	tlsConfig, err = temporalclient.TLS(cfg, "ns.acct.tmprl.cloud:7233")
	require.NoError(t, err)
	require.NotNil(t, tlsConfig)
	require.Equal(t, "ns.acct.tmprl.cloud", tlsConfig.ServerName)
	// To the embedded server on this machine the key goes over plain
	// loopback: it is that server's credential for Encore's processes.
	for _, addr := range []string{"127.0.0.1:7233", "localhost:7233", "[::1]:7233"} {
		tlsConfig, err = temporalclient.TLS(cfg, addr)
		require.NoError(t, err)
		require.Nil(t, tlsConfig, addr)
		opts, err := temporalclient.Options(cfg, addr, nil)
		require.NoError(t, err)
		require.True(t, opts.ConnectionOptions.TLSDisabled, addr)
		require.NotNil(t, opts.Credentials, addr)
	}
}

func TestTLSSettingsThatCannotWorkAreRefused(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	dir := t.TempDir()
	cases := map[string]func(c *config.Config){
		"a certificate without its key": func(c *config.Config) { c.TemporalTLSCert = p.cert },
		"a key without its certificate": func(c *config.Config) { c.TemporalTLSKey = p.key },
		"a missing CA file":             func(c *config.Config) { c.TemporalTLSCA = filepath.Join(dir, "none.pem") },
		"a CA file without PEM":         func(c *config.Config) { c.TemporalTLSCA = p.key },
		"a certificate of another key":  func(c *config.Config) { c.TemporalTLSCert, c.TemporalTLSKey = p.cert, p.otherKey },
		"codec keys that do not parse":  func(c *config.Config) { c.TemporalCodecKeys = "k:short" },
	}
	for name, set := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := config.Default()
			set(&cfg)
			_, err := temporalclient.Options(cfg, "127.0.0.1:7233", nil)
			require.Error(t, err)
		})
	}
}

func TestEveryClientEncryptsPayloads(t *testing.T) {
	t.Parallel()
	opts, err := temporalclient.Options(config.Default(), "127.0.0.1:7233", nil)
	require.NoError(t, err)
	p, err := opts.DataConverter.ToPayload(map[string]string{"ip": "198.51.100.7"})
	require.NoError(t, err)
	require.Equal(t, payloadcodec.Encoding, string(p.Metadata["encoding"]))
	require.NotContains(t, string(p.Data), "198.51.100.7")
}

// A provider's error text (a decline, a card's details in a message) used
// to sit in history in clear; the failure converter encrypts it, and only
// the codec gets it back.
func TestFailureMessagesAreEncryptedAndDecodeBack(t *testing.T) {
	opts, err := temporalclient.Options(config.Default(), "127.0.0.1:7233", nil)
	require.NoError(t, err)
	require.NotNil(t, opts.FailureConverter)
	f := opts.FailureConverter.ErrorToFailure(temporal.NewApplicationError("card 4242 declined: insufficient_funds", "declined"))
	require.NotContains(t, f.GetMessage(), "4242")
	require.NotContains(t, string(f.GetEncodedAttributes().GetData()), "4242", "the message is encrypted, not only moved")
	require.NotContains(t, f.GetStackTrace(), "4242")
	back := opts.FailureConverter.FailureToError(f)
	require.Contains(t, back.Error(), "card 4242 declined")
	var app *temporal.ApplicationError
	require.ErrorAs(t, back, &app)
	require.Equal(t, "declined", app.Type())
}

func TestReadingAFailureLeavesItEncrypted(t *testing.T) {
	opts, err := temporalclient.Options(config.Default(), "127.0.0.1:7233", nil)
	require.NoError(t, err)
	f := opts.FailureConverter.ErrorToFailure(temporal.NewNonRetryableApplicationError("capture refused for card 4242", "rejected", nil))
	// The SDK reads a local activity's failure, then writes that same
	// failure into the activity's marker in history.
	require.Contains(t, opts.FailureConverter.FailureToError(f).Error(), "capture refused for card 4242")
	require.NotContains(t, f.GetMessage(), "4242", "the failure read is still encrypted when it is written")
	require.NotContains(t, f.GetStackTrace(), "4242")
	require.Contains(t, opts.FailureConverter.FailureToError(f).Error(), "4242", "and reads again")
	require.Nil(t, opts.FailureConverter.FailureToError(nil))
}

// A client of a Temporal on this machine sends its requests uncompressed
// (gzip there costs both ends CPU and saves nothing); one across a network
// keeps the SDK's gzip.
func TestOnlyALoopbackClientSendsUncompressedRequests(t *testing.T) {
	t.Parallel()
	cases := []struct {
		addr       string
		compressed bool
	}{
		{"127.0.0.1:7233", false},
		{"localhost:7233", false},
		{"[::1]:7233", false},
		{"ns.acct.tmprl.cloud:7233", true},
		{"10.0.0.7:7233", true},
	}
	for _, c := range cases {
		opts, err := temporalclient.Options(config.Default(), c.addr, nil)
		require.NoError(t, err, c.addr)
		if c.compressed {
			require.Nil(t, opts.ConnectionOptions.GrpcCompression, "%s: the SDK's default, gzip", c.addr)
		} else {
			require.IsType(t, &client.GrpcCompressionNone{}, opts.ConnectionOptions.GrpcCompression, c.addr)
		}
	}
}

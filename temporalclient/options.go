// Package temporalclient builds the options every Encore Temporal client and
// worker connects with: the address and namespace, TLS (mutual TLS with a
// client certificate, or an API key as Temporal Cloud takes it) and the data
// converter that encrypts every payload (and the failure converter that
// encrypts every failure's message), so no command writes history in
// clear or talks to Temporal over a path the configuration did not choose.
package temporalclient

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"

	failurepb "go.temporal.io/api/failure/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/proto"

	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/payloadcodec"
)

// Options are the client options for the Temporal frontend at hostPort, from
// the configuration: encore api, encore worker, encore dev and the tests'
// shared client all dial with them.
func Options(cfg config.Config, hostPort string, log *slog.Logger) (client.Options, error) {
	codec, err := Codec(cfg)
	if err != nil {
		return client.Options{}, err
	}
	tlsConfig, err := TLS(cfg, hostPort)
	if err != nil {
		return client.Options{}, err
	}
	opts := client.Options{
		HostPort:          hostPort,
		Namespace:         cfg.TemporalNamespace,
		DataConverter:     codec.DataConverter(),
		FailureConverter:  FailureConverter(codec),
		ConnectionOptions: client.ConnectionOptions{TLS: tlsConfig},
	}
	if Loopback(hostPort) {
		// The SDK gzips every request by default (and the server then
		// every answer): on a loopback connection that saves no bandwidth
		// and cost both ends CPU, about 4 % of encore dev's while it sells
		// (deflate and inflate in a profile of paid bookings).
		opts.ConnectionOptions.GrpcCompression = &client.GrpcCompressionNone{}
	}
	if log != nil {
		opts.Logger = sdklog.NewStructuredLogger(log.With("component", "temporal-client"))
	}
	if key := cfg.TemporalAPIKey.Reveal(); key != "" {
		opts.Credentials = client.NewAPIKeyStaticCredentials(key)
		// The SDK turns TLS on with an API key; TLS chose plain text for
		// a loopback server (the embedded one), which checks the key.
		opts.ConnectionOptions.TLSDisabled = tlsConfig == nil
	}
	return opts, nil
}

// Loopback reports whether hostPort names this machine: localhost or a
// loopback IP.
func Loopback(hostPort string) bool {
	host, _, err := net.SplitHostPort(hostPort)
	if err != nil {
		host = hostPort
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// FailureConverter encrypts what a failure says: its message and stack
// trace (provider error text, a card's decline) move into an encoded payload
// that the codec encrypts like every other, and history shows only
// "Encoded failure" to whoever reads it without the codec endpoint. Failures
// recorded before decode as they were.
func FailureConverter(codec *payloadcodec.Codec) converter.FailureConverter {
	return decodingACopy{temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{
		DataConverter:          codec.DataConverter(),
		EncodeCommonAttributes: true,
	})}
}

// decodingACopy decodes a copy of the failure it is given. The SDK's
// converter decodes the message back into the failure it reads, and the SDK
// reads a local activity's failure (to hand the workflow its error) before
// it writes that same failure into the activity's marker: without the copy,
// every local activity's error text went into history in clear beside its
// encrypted form.
type decodingACopy struct{ converter.FailureConverter }

// FailureToError is the wrapped converter's, on a copy of f.
func (c decodingACopy) FailureToError(f *failurepb.Failure) error {
	if f == nil {
		return nil
	}
	return c.FailureConverter.FailureToError(proto.Clone(f).(*failurepb.Failure))
}

// Codec is the payload codec of ENCORE_TEMPORAL_CODEC_KEYS.
func Codec(cfg config.Config) (*payloadcodec.Codec, error) {
	c, err := payloadcodec.Parse(cfg.TemporalCodecKeys.Reveal())
	if err != nil {
		return nil, fmt.Errorf("ENCORE_TEMPORAL_CODEC_KEYS: %w", err)
	}
	return c, nil
}

// TLS is the TLS configuration for the frontend at hostPort, or nil for a
// plain connection (the embedded development server). An API key implies
// TLS, except to a loopback address: it is a bearer token, and sending one
// in clear over a network would give it away; the embedded server on this
// machine (encore dev, encore temporal) takes its key over plain loopback.
func TLS(cfg config.Config, hostPort string) (*tls.Config, error) {
	if (cfg.TemporalTLSCert == "") != (cfg.TemporalTLSKey == "") {
		return nil, errors.New("ENCORE_TEMPORAL_TLS_CERT and ENCORE_TEMPORAL_TLS_KEY go together")
	}
	on := cfg.TemporalTLS || cfg.TemporalTLSCA != "" || cfg.TemporalTLSCert != "" ||
		cfg.TemporalTLSServerName != "" || (cfg.TemporalAPIKey != "" && !Loopback(hostPort))
	if !on {
		return nil, nil
	}
	t := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: cfg.TemporalTLSServerName}
	if t.ServerName == "" {
		if host, _, err := net.SplitHostPort(hostPort); err == nil {
			t.ServerName = host
		}
	}
	if cfg.TemporalTLSCA != "" {
		pem, err := os.ReadFile(cfg.TemporalTLSCA)
		if err != nil {
			return nil, fmt.Errorf("ENCORE_TEMPORAL_TLS_CA: %w", err)
		}
		t.RootCAs = x509.NewCertPool()
		if !t.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ENCORE_TEMPORAL_TLS_CA: no PEM certificate in %s", cfg.TemporalTLSCA)
		}
	}
	if cfg.TemporalTLSCert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TemporalTLSCert, cfg.TemporalTLSKey)
		if err != nil {
			return nil, fmt.Errorf("ENCORE_TEMPORAL_TLS_CERT/ENCORE_TEMPORAL_TLS_KEY: %w", err)
		}
		t.Certificates = []tls.Certificate{cert}
	}
	return t, nil
}

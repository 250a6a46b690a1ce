package system

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net"
	"net/http"
	"strings"

	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/payloadcodec"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/temporalclient"
)

// CodecEndpoint is the codec endpoint URL the Temporal Web UI calls
// (ENCORE_TEMPORAL_CODEC_ENDPOINT, else the admin listener's /codec).
func CodecEndpoint(cfg config.Config) string {
	if cfg.TemporalCodecEndpoint != "" {
		return strings.TrimRight(cfg.TemporalCodecEndpoint, "/")
	}
	return HTTPURL(loopbackHost(cfg.AdminAddr)) + "/codec"
}

// loopbackHost turns a listen address on every interface into one a
// browser on this machine can reach.
func loopbackHost(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// ErrDevCodecKey: a production process must not encrypt (or decrypt) with
// the published development codec key.
var ErrDevCodecKey = errors.New("ENCORE_TEMPORAL_CODEC_KEYS holds the development default key: anyone could read " +
	"the payloads it encrypts; run encore keys generate for a fresh keyring, or set ENCORE_ENV=development on a development machine")

// CodecHandler serves the Temporal codec server protocol with the payload
// codec of ENCORE_TEMPORAL_CODEC_KEYS, for the namespace of
// ENCORE_TEMPORAL_NAMESPACE, to the Web UI origins of
// ENCORE_TEMPORAL_UI_ORIGINS (else the embedded UI's), for callers
// CodecAuthorizer accepts. It answers <prefix>/decode and <prefix>/encode
// under whatever prefix it is mounted at: mount it on the admin listener
// only, at the path of CodecEndpoint. Outside development it refuses a
// keyring that still holds the development key.
func CodecHandler(cfg config.Config, tokens func() *session.Verifier) (http.Handler, error) {
	if !cfg.Development() && config.KeyringHoldsDefault(cfg.TemporalCodecKeys.Reveal(), config.DevCodecKeys()) {
		return nil, ErrDevCodecKey
	}
	codec, err := temporalclient.Codec(cfg)
	if err != nil {
		return nil, err
	}
	return payloadcodec.Handler(codec, payloadcodec.Options{Namespace: cfg.TemporalNamespace, Origins: UIOrigins(cfg),
		Authorize: CodecAuthorizer(cfg.TemporalCodecToken, tokens)}), nil
}

// CodecAuthorizer accepts a request whose Authorization bearer is the
// configured codec token (compared in constant time), or an access token
// that tokens verifies (the Web UI forwards its user's when its codec
// option "pass access token" is on) of a support or admin: only the people
// who read fans' bookings anyway may read the saga's history in clear.
// tokens may return nil (no identity provider in this process).
func CodecAuthorizer(bearer config.Secret, tokens func() *session.Verifier) func(*http.Request) bool {
	want := sha256.Sum256([]byte(bearer.Reveal()))
	return func(r *http.Request) bool {
		scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
			return false
		}
		// Hash both sides so the comparison takes the same time whatever
		// the length of the guess.
		got := sha256.Sum256([]byte(tok))
		if bearer != "" && subtle.ConstantTimeCompare(got[:], want[:]) == 1 {
			return true
		}
		v := tokens()
		if v == nil {
			return false
		}
		id, err := v.Verify(r.Context(), tok)
		return err == nil && (id.Has(session.Support) || id.Has(session.Admin))
	}
}

// UIOrigins are the Web UI origins allowed to call the codec endpoint.
func UIOrigins(cfg config.Config) []string {
	var out []string
	for _, o := range strings.Split(cfg.TemporalUIOrigins, ",") {
		if o = strings.TrimRight(strings.TrimSpace(o), "/"); o != "" {
			out = append(out, o)
		}
	}
	if len(out) > 0 {
		return out
	}
	out = []string{"http://" + cfg.TemporalUIAddr}
	if host, port, ok := strings.Cut(cfg.TemporalUIAddr, ":"); ok && (host == "127.0.0.1" || host == "0.0.0.0" || host == "") {
		out = append(out, "http://localhost:"+port)
	}
	return out
}

package system

import (
	"net"
	"net/http"
	"strings"

	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/payloadcodec"
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

// CodecHandler serves the Temporal codec server protocol with the payload
// codec of ENCORE_TEMPORAL_CODEC_KEYS, for the namespace of
// ENCORE_TEMPORAL_NAMESPACE, to the Web UI origins of
// ENCORE_TEMPORAL_UI_ORIGINS (else the embedded UI's). It answers
// <prefix>/decode and <prefix>/encode under whatever prefix it is mounted
// at: mount it on the admin listener only (it decrypts history for whoever
// reaches it), at the path of CodecEndpoint.
func CodecHandler(cfg config.Config) (http.Handler, error) {
	codec, err := temporalclient.Codec(cfg)
	if err != nil {
		return nil, err
	}
	return payloadcodec.Handler(codec, cfg.TemporalNamespace, UIOrigins(cfg)), nil
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

package system_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/system"
	"github.com/encore-tickets/encore/temporalclient"
)

// codecBearer is the test's ENCORE_TEMPORAL_CODEC_TOKEN.
const codecBearer = "codec-bearer-of-the-test-0123456789abcdef"

// codecAdmin is an admin listener with the codec mounted as New mounts it,
// for a development config with the codec bearer and the development
// issuer's verifier; it returns the listener's URL, the issuer and one
// encrypted payload.
func codecAdmin(t *testing.T) (string, *session.Issuer, []*commonpb.Payload) {
	t.Helper()
	cfg := config.Default()
	cfg.Env = config.Development
	cfg.TemporalCodecToken = codecBearer
	issuer := session.NewIssuer("codec-test-secret")
	h, err := system.CodecHandler(cfg, issuer.Verifier)
	require.NoError(t, err)
	srv := httptest.NewServer(system.AdminHandler(prometheus.NewRegistry(), map[string]http.Handler{"/codec/": http.StripPrefix("/codec", h)}))
	t.Cleanup(srv.Close)
	c, err := temporalclient.Codec(cfg)
	require.NoError(t, err)
	p, err := converter.GetDefaultDataConverter().ToPayload("fan@example.com")
	require.NoError(t, err)
	enc, err := c.Encode([]*commonpb.Payload{p})
	require.NoError(t, err)
	return srv.URL, issuer, enc
}

// decode posts payloads to the codec as the Web UI does, with the given
// Authorization (empty: none), and returns the status and body.
func decode(t *testing.T, base, auth string, payloads []*commonpb.Payload) (int, string) {
	t.Helper()
	body, err := protojson.Marshal(&commonpb.Payloads{Payloads: payloads})
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, base+"/codec/decode", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Namespace", "default")
	req.Header.Set("Origin", "http://127.0.0.1:8233")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(raw)
}

func TestTheCodecOnTheAdminListenerDecodesNothingForACallerWithoutCredentials(t *testing.T) {
	t.Parallel()
	base, issuer, enc := codecAdmin(t)
	fan := issuer.Issue("fan-1", "phone", time.Now())
	for name, auth := range map[string]string{
		"no Authorization":    "",
		"a guessed bearer":    "Bearer not-the-codec-bearer",
		"a fan's token":       "Bearer " + fan,
		"the bearer as Basic": "Basic " + codecBearer,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			status, body := decode(t, base, auth, enc)
			require.Equal(t, http.StatusUnauthorized, status, body)
			require.Contains(t, body, `"type":"/problems/unauthorized"`)
			require.NotContains(t, body, "fan@example.com")
		})
	}
}

func TestTheCodecDecodesForTheConfiguredBearerAndASupportTokenTheUIForwards(t *testing.T) {
	t.Parallel()
	base, issuer, enc := codecAdmin(t)
	support, err := issuer.Mint(session.Identity{UserID: "sam", DeviceID: "desk", Roles: []session.Role{session.Support}}, time.Now())
	require.NoError(t, err)
	for name, auth := range map[string]string{"the configured bearer": "Bearer " + codecBearer, "a support token": "Bearer " + support} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			status, body := decode(t, base, auth, enc)
			require.Equal(t, http.StatusOK, status, body)
			var out commonpb.Payloads
			require.NoError(t, protojson.Unmarshal([]byte(body), &out))
			var got string
			require.NoError(t, converter.GetDefaultDataConverter().FromPayload(out.Payloads[0], &got))
			require.Equal(t, "fan@example.com", got)
		})
	}
}

func TestACrossOriginPreflightToTheCodecFromAnotherOriginGetsNoCORSAllowance(t *testing.T) {
	t.Parallel()
	base, _, _ := codecAdmin(t)
	for origin, allowed := range map[string]bool{"http://127.0.0.1:8233": true, "http://evil.example": false} {
		req, err := http.NewRequest(http.MethodOptions, base+"/codec/decode", nil)
		require.NoError(t, err)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "authorization,content-type,x-namespace")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		if allowed {
			require.Equal(t, origin, resp.Header.Get("Access-Control-Allow-Origin"))
			require.Contains(t, resp.Header.Get("Access-Control-Allow-Headers"), "Authorization")
			continue
		}
		require.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"), origin)
		require.Empty(t, resp.Header.Get("Access-Control-Allow-Headers"), origin)
		require.NotEqual(t, http.StatusOK, resp.StatusCode)
	}
}

func TestAProductionProcessRefusesToStartWithTheDevelopmentCodecKey(t *testing.T) {
	t.Parallel()
	fresh := "k2:" + "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"
	for name, keys := range map[string]string{
		"the default keyring":              config.DevCodecKeys(),
		"a new key before the default one": fresh + "," + config.DevCodecKeys(),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := config.Default()
			cfg.TemporalCodecKeys = config.Secret(keys)
			_, err := system.CodecHandler(cfg, func() *session.Verifier { return nil })
			require.ErrorIs(t, err, system.ErrDevCodecKey)
			require.ErrorContains(t, cfg.CheckSecrets("worker"), "ENCORE_TEMPORAL_CODEC_KEYS")
		})
	}
	cfg := config.Default()
	cfg.TemporalCodecKeys = config.Secret(fresh)
	_, err := system.CodecHandler(cfg, func() *session.Verifier { return nil })
	require.NoError(t, err, "a fresh keyring starts")
}

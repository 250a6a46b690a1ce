package payloadcodec_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/encore-tickets/encore/payloadcodec"
)

const (
	uiOrigin = "http://127.0.0.1:8233"
	bearer   = "Bearer codec-test-bearer"
)

func codecServer(t *testing.T) (*httptest.Server, *payloadcodec.Codec) {
	t.Helper()
	c := mustParse(t, keyA)
	srv := httptest.NewServer(http.StripPrefix("/codec", payloadcodec.Handler(c, payloadcodec.Options{
		Namespace: "default", Origins: []string{uiOrigin},
		Authorize: func(r *http.Request) bool { return r.Header.Get("Authorization") == bearer },
	})))
	t.Cleanup(srv.Close)
	return srv, c
}

// post sends payloads the way the Web UI does and returns the status, the
// CORS origin answered and the payloads of a 200.
func post(t *testing.T, url, namespace string, payloads []*commonpb.Payload) (int, string, []*commonpb.Payload) {
	t.Helper()
	body, err := protojson.Marshal(&commonpb.Payloads{Payloads: payloads})
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Namespace", namespace)
	req.Header.Set("Origin", uiOrigin)
	req.Header.Set("Authorization", bearer)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"), nil
	}
	var out commonpb.Payloads
	require.NoError(t, protojson.Unmarshal(b, &out))
	return resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"), out.Payloads
}

func TestTheCodecEndpointDecodesWhatTheCodecEncrypted(t *testing.T) {
	t.Parallel()
	srv, c := codecServer(t)
	enc, err := c.Encode([]*commonpb.Payload{payload(t, "198.51.100.7")})
	require.NoError(t, err)
	status, allow, dec := post(t, srv.URL+"/codec/decode", "default", enc)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, uiOrigin, allow)
	require.Equal(t, "198.51.100.7", value[string](t, dec[0]))
}

func TestTheCodecEndpointEncryptsWhatTheUISends(t *testing.T) {
	t.Parallel()
	srv, c := codecServer(t)
	status, _, enc := post(t, srv.URL+"/codec/encode", "default", []*commonpb.Payload{payload(t, "signal input")})
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, payloadcodec.Encoding, string(enc[0].Metadata[converter.MetadataEncoding]))
	dec, err := c.Decode(enc)
	require.NoError(t, err)
	require.Equal(t, "signal input", value[string](t, dec[0]))
}

func TestTheCodecEndpointAnswersTheUIsPreflight(t *testing.T) {
	t.Parallel()
	srv, _ := codecServer(t)
	cases := []struct {
		origin string
		status int
		allow  string
	}{
		{uiOrigin, http.StatusNoContent, uiOrigin},
		{"http://evil.example", http.StatusForbidden, ""},
	}
	for _, tc := range cases {
		req, err := http.NewRequest(http.MethodOptions, srv.URL+"/codec/decode", nil)
		require.NoError(t, err)
		req.Header.Set("Origin", tc.origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "content-type,x-namespace")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, tc.status, resp.StatusCode, tc.origin)
		require.Equal(t, tc.allow, resp.Header.Get("Access-Control-Allow-Origin"), tc.origin)
		if tc.allow != "" {
			require.Contains(t, resp.Header.Get("Access-Control-Allow-Headers"), "X-Namespace")
			require.Contains(t, resp.Header.Get("Access-Control-Allow-Methods"), "POST")
		}
	}
}

func TestTheCodecEndpointRefusesWhatItCannotOrMayNotDecodeWith4xx(t *testing.T) {
	t.Parallel()
	srv, c := codecServer(t)
	fromB, err := mustParse(t, keyB).Encode([]*commonpb.Payload{payload(t, "x")})
	require.NoError(t, err)
	tampered, err := c.Encode([]*commonpb.Payload{payload(t, "x")})
	require.NoError(t, err)
	tampered[0].Data[20] ^= 1
	mine, err := c.Encode([]*commonpb.Payload{payload(t, "x")})
	require.NoError(t, err)

	cases := map[string]struct {
		namespace string
		payloads  []*commonpb.Payload
		status    int
	}{
		"unknown key id":      {"default", fromB, http.StatusBadRequest},
		"tampered ciphertext": {"default", tampered, http.StatusBadRequest},
		"another namespace":   {"other", mine, http.StatusForbidden},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			status, _, _ := post(t, srv.URL+"/codec/decode", tc.namespace, tc.payloads)
			require.Equal(t, tc.status, status)
		})
	}

	t.Run("not json", func(t *testing.T) {
		t.Parallel()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/codec/decode", bytes.NewReader([]byte("{")))
		req.Header.Set("X-Namespace", "default")
		req.Header.Set("Authorization", bearer)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	})
	t.Run("another origin", func(t *testing.T) {
		t.Parallel()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/codec/decode", bytes.NewReader([]byte(`{"payloads":[]}`)))
		req.Header.Set("X-Namespace", "default")
		req.Header.Set("Origin", "http://evil.example")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
	})
}

func TestTheCodecEndpointRefusesACallerWithoutTheCredential(t *testing.T) {
	t.Parallel()
	srv, c := codecServer(t)
	enc, err := c.Encode([]*commonpb.Payload{payload(t, "198.51.100.7")})
	require.NoError(t, err)
	body, err := protojson.Marshal(&commonpb.Payloads{Payloads: enc})
	require.NoError(t, err)
	for name, auth := range map[string]string{"none": "", "a wrong bearer": "Bearer guess"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			req, err := http.NewRequest(http.MethodPost, srv.URL+"/codec/decode", bytes.NewReader(body))
			require.NoError(t, err)
			req.Header.Set("X-Namespace", "default")
			req.Header.Set("Origin", uiOrigin)
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
			require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
			require.NotContains(t, string(raw), "198.51.100.7")
			require.Contains(t, resp.Header.Get("WWW-Authenticate"), "Bearer")
		})
	}
}

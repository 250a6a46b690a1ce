// Package apitest sends requests to a test server of the fan API and reads
// its answers, for the tests of the api package and of the packages whose
// routes it serves (the waiting room's), so that each builds its requests
// and decodes its replies the same way, and serves them the same hold
// service (Holds). Its Endless body is the one the caps on a venue import
// are tested with, by the venues parsers' tests and by the API's route
// alike.
package apitest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// Response is one answer of the API: its status, headers, raw body and, when
// the body is a JSON object, that object.
type Response struct {
	Status int
	Header http.Header
	Body   map[string]any
	Raw    []byte
}

// Do sends method url with body and returns the answer, failing t when the
// request cannot be made or read. A nil body sends none, a []byte is sent as
// it is (for malformed JSON) and anything else as its JSON. A non-empty token
// goes as the bearer token; headers are name, value pairs.
func Do(t testing.TB, method, url, token string, body any, headers ...string) Response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		require.NoError(t, err)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, url, rd)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	r := Response{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
	// Not every answer is a JSON object (204s, the web app's pages): those
	// leave Body nil and the test reads Raw.
	_ = json.Unmarshal(raw, &r.Body)
	return r
}

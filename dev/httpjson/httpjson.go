// Package httpjson builds the JSON requests that the development tools (the
// drills, the rehearsal) send to a running stack, so that they all speak to
// it the same way.
package httpjson

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
)

// NewRequest builds a request with body, if not nil, encoded as JSON, the
// token, if not empty, as a bearer token, and headers given in name, value
// pairs (an odd last name is ignored).
func NewRequest(ctx context.Context, method, url, token string, body any, headers ...string) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return req, nil
}

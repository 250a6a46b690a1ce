package notify_test

import (
	"encoding/base64"
	"io"
	"mime/quotedprintable"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func decodeBase64(t *testing.T, r io.Reader) io.Reader {
	t.Helper()
	b, err := io.ReadAll(r)
	require.NoError(t, err)
	out, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(string(b)), ""))
	require.NoError(t, err)
	return strings.NewReader(string(out))
}

func qpReader(r io.Reader) io.Reader { return quotedprintable.NewReader(r) }

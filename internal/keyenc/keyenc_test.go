package keyenc_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/internal/keyenc"
)

func TestAKeyDecodesFromHexOrAnyBase64AndOnlyAtItsSize(t *testing.T) {
	t.Parallel()
	key := []byte(strings.Repeat("\xfb\xef", 16))
	for _, tc := range []struct {
		name, in string
	}{
		{"hex", strings.Repeat("fbef", 16)},
		{"hex with spaces around", "  " + strings.Repeat("FBEF", 16) + "\n"},
		{"standard base64", base64.StdEncoding.EncodeToString(key)},
		{"raw standard base64", base64.RawStdEncoding.EncodeToString(key)},
		{"URL-safe base64", base64.URLEncoding.EncodeToString(key)},
		{"raw URL-safe base64", base64.RawURLEncoding.EncodeToString(key)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := keyenc.Decode(tc.in, 32)
			require.NoError(t, err)
			require.Equal(t, key, got)
		})
	}
	for _, in := range []string{"", strings.Repeat("ab", 31), strings.Repeat("ab", 33), "not a key"} {
		_, err := keyenc.Decode(in, 32)
		require.EqualError(t, err, "must be 32 bytes as 64 hex characters or base64", in)
	}
}

package payloadcodec_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"

	"github.com/encore-tickets/encore/payloadcodec"
)

const (
	keyA = "a:000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	// keyB is base64 of 32 bytes.
	keyB = "b:ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8="
)

func mustParse(t *testing.T, spec string) *payloadcodec.Codec {
	t.Helper()
	c, err := payloadcodec.Parse(spec)
	require.NoError(t, err)
	return c
}

func payload(t *testing.T, v any) *commonpb.Payload {
	t.Helper()
	p, err := converter.GetDefaultDataConverter().ToPayload(v)
	require.NoError(t, err)
	return p
}

// value decodes p into a T: payload's inverse.
func value[T any](t *testing.T, p *commonpb.Payload) T {
	t.Helper()
	var v T
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(p, &v))
	return v
}

func TestAnEncodedPayloadHoldsNeitherTheValueNorItsEncodingInClear(t *testing.T) {
	t.Parallel()
	c := mustParse(t, keyA)
	secret := "pi_123_secret_abc"
	enc, err := c.Encode([]*commonpb.Payload{payload(t, map[string]string{"client_secret": secret})})
	require.NoError(t, err)
	require.Len(t, enc, 1)
	require.Equal(t, payloadcodec.Encoding, string(enc[0].Metadata[converter.MetadataEncoding]))
	require.Equal(t, "a", string(enc[0].Metadata[payloadcodec.KeyIDMetadata]))
	require.NotContains(t, string(enc[0].Data), secret)
	require.NotContains(t, string(enc[0].Data), "json/plain")

	dec, err := c.Decode(enc)
	require.NoError(t, err)
	require.Equal(t, secret, value[map[string]string](t, dec[0])["client_secret"])
}

func TestTheSameValueEncryptsDifferentlyEachTime(t *testing.T) {
	t.Parallel()
	c := mustParse(t, keyA)
	p := payload(t, "same")
	one, err := c.Encode([]*commonpb.Payload{p})
	require.NoError(t, err)
	two, err := c.Encode([]*commonpb.Payload{p})
	require.NoError(t, err)
	require.NotEqual(t, one[0].Data, two[0].Data, "a random nonce per payload")
}

func TestAPlainPayloadPassesThroughDecodeUnchanged(t *testing.T) {
	t.Parallel()
	p := payload(t, "written before encryption")
	dec, err := mustParse(t, keyA).Decode([]*commonpb.Payload{p})
	require.NoError(t, err)
	require.Same(t, p, dec[0])
}

func TestAPayloadWrittenWithKeyADecodesAfterRotationToBThenA(t *testing.T) {
	t.Parallel()
	enc, err := mustParse(t, keyA).Encode([]*commonpb.Payload{payload(t, "old")})
	require.NoError(t, err)

	rotated := mustParse(t, keyB+","+keyA)
	dec, err := rotated.Decode(enc)
	require.NoError(t, err)
	require.Equal(t, "old", value[string](t, dec[0]))

	fresh, err := rotated.Encode([]*commonpb.Payload{payload(t, "new")})
	require.NoError(t, err)
	require.Equal(t, "b", string(fresh[0].Metadata[payloadcodec.KeyIDMetadata]), "the first key encrypts")

	_, err = mustParse(t, keyB).Decode(enc)
	require.ErrorIs(t, err, payloadcodec.ErrUnknownKey, "once A is dropped its payloads no longer decode")
}

func TestAnAlteredPayloadDoesNotDecode(t *testing.T) {
	t.Parallel()
	c := mustParse(t, keyA)
	cases := map[string]func(p *commonpb.Payload){
		"flipped byte": func(p *commonpb.Payload) { p.Data[len(p.Data)-1] ^= 1 },
		"truncated":    func(p *commonpb.Payload) { p.Data = p.Data[:10] },
		"relabelled":   func(p *commonpb.Payload) { p.Metadata[payloadcodec.KeyIDMetadata] = []byte("b") },
	}
	for name, alter := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			enc, err := c.Encode([]*commonpb.Payload{payload(t, "x")})
			require.NoError(t, err)
			alter(enc[0])
			_, err = mustParse(t, keyA+","+keyB).Decode(enc)
			require.ErrorIs(t, err, payloadcodec.ErrTampered)
		})
	}
}

func TestAKeyListThatDoesNotParseIsRefused(t *testing.T) {
	t.Parallel()
	for _, spec := range []string{"", " , ", "nokey", ":00", "a:short", "a:" + strings.Repeat("0", 62), keyA + "," + keyA} {
		_, err := payloadcodec.Parse(spec)
		require.Error(t, err, "%q", spec)
	}
}

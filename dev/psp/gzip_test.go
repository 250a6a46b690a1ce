package psp

import (
	"bytes"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/testenv"
)

// A stored response is compressed with a reused compressor, and reads back
// as it was: a new compressor each time allocated about 1 MB of deflate
// state for a response of a few kilobytes.
func TestStoredResponsesReuseTheirCompressorAndReadBackUnchanged(t *testing.T) {
	body := bytes.Repeat([]byte(`{"id":"pi_123","object":"payment_intent","status":"requires_capture"},`), 40)
	rec := &idemRecord{BodyGz: gzipBytes(body)}
	require.Equal(t, body, rec.body())
	if testenv.Race {
		t.Skip("the race detector's sync.Pool drops what is put back at random")
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 20 {
		gzipBytes(body)
	}
	runtime.ReadMemStats(&after)
	require.Less(t, (after.TotalAlloc-before.TotalAlloc)/20, uint64(64<<10), "bytes allocated a stored response")
}

package notify_test

import (
	"bytes"
	"image"
	"image/png"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/notify"
)

// TestQRPNGIsASquarePNGWithAQuietZone checks the image, not the code in it:
// a PNG of the asked size, black on white, the symbol centred with at least
// four blank modules all round (a module measured on the top-left finder
// pattern, seven modules wide).
func TestQRPNGIsASquarePNGWithAQuietZone(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		size          int
	}{
		{"email", "https://tickets.example/#/booking/b-1", 256},
		{"ticket", "enc1.0123456789abcdef0123456789abcdef.1767225600.c2lnbmF0dXJlLXNpZ25hdHVyZS1zaWduYXR1cmU", 320},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := notify.QRPNG(tc.content, tc.size)
			require.NoError(t, err)
			img, err := png.Decode(bytes.NewReader(b))
			require.NoError(t, err, "a valid PNG")
			require.Equal(t, image.Rect(0, 0, tc.size, tc.size), img.Bounds())

			dark := func(x, y int) bool {
				r, g, bl, _ := img.At(x, y).RGBA()
				require.True(t, r == g && g == bl && (r == 0 || r == 0xffff), "black or white only at %d,%d", x, y)
				return r == 0
			}
			minX, minY, maxX, maxY := tc.size, tc.size, -1, -1
			for y := 0; y < tc.size; y++ {
				for x := 0; x < tc.size; x++ {
					if dark(x, y) {
						minX, minY, maxX, maxY = min(minX, x), min(minY, y), max(maxX, x), max(maxY, y)
					}
				}
			}
			require.GreaterOrEqual(t, maxX, 0, "some modules are dark")
			require.Equal(t, maxX-minX, maxY-minY, "the symbol is square")
			run := 0
			for x := minX; x <= maxX && dark(x, minY); x++ {
				run++
			}
			require.Zero(t, run%7, "the finder pattern's top edge is seven whole modules")
			module := run / 7
			require.GreaterOrEqual(t, module, 2, "several pixels a module at this size")
			left, right := minX, tc.size-1-maxX
			top, bottom := minY, tc.size-1-maxY
			for _, margin := range []int{left, right, top, bottom} {
				require.GreaterOrEqual(t, margin, 4*module, "a quiet zone of four modules")
			}
			require.InDelta(t, left, right, 1, "centred")
			require.InDelta(t, top, bottom, 1, "centred")
		})
	}

	t.Run("too small grows to one pixel a module", func(t *testing.T) {
		b, err := notify.QRPNG("https://tickets.example/#/booking/b-1", 10)
		require.NoError(t, err)
		cfg, err := png.DecodeConfig(bytes.NewReader(b))
		require.NoError(t, err)
		require.Equal(t, cfg.Width, cfg.Height)
		require.Greater(t, cfg.Width, 21+8, "at least the smallest symbol and its quiet zone")
	})
}

// Encoding QR codes one after another reuses one compressor: without it
// each code allocated about 1 MB (850 KB of it deflate state) for a PNG of
// a few hundred bytes; with it about 45 KB (the eight masks' symbols and
// the image's rows).
func TestQRCodesReuseTheirCompressor(t *testing.T) {
	if testenv.Race {
		t.Skip("the race detector's sync.Pool drops what is put back at random")
	}
	encode := func() {
		_, err := notify.QRPNG("enc1.0123456789abcdef0123456789abcdef.1767225600.c2lnbmF0dXJl", 320)
		require.NoError(t, err)
	}
	encode()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 10 {
		encode()
	}
	runtime.ReadMemStats(&after)
	perCode := (after.TotalAlloc - before.TotalAlloc) / 10
	require.Less(t, perCode, uint64(200<<10), "bytes allocated a code")
}

func BenchmarkQRPNG(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := notify.QRPNG("enc1.0123456789abcdef0123456789abcdef.1767225600.c2lnbmF0dXJl", 320); err != nil {
			b.Fatal(err)
		}
	}
}

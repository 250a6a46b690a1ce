package system_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/gate"
	"github.com/encore-tickets/encore/manifest"
	"github.com/encore-tickets/encore/notify"
	"github.com/encore-tickets/encore/tickets"
)

// scannerBrowser is browser with a fake camera: Chromium grants the page
// the camera without asking and films clip (a Y4M file) in a loop. Its
// clock reads UTC, so the times the app shows are the test's.
func scannerBrowser(t *testing.T, within time.Duration, clip string) context.Context {
	t.Helper()
	return browserWith(t, within, chromedp.WindowSize(412, 915),
		chromedp.Flag("use-fake-ui-for-media-stream", true),
		chromedp.Flag("use-fake-device-for-media-stream", true),
		chromedp.Flag("use-file-for-fake-video-capture", clip),
		chromedp.Flag("autoplay-policy", "no-user-gesture-required"),
		chromedp.Env("TZ=UTC"))
}

// writeY4M writes frames copies of img, centred on a white 640x480 frame,
// as a YUV4MPEG2 clip (4:2:0, greyscale: the chroma planes are neutral),
// what Chromium's fake camera plays.
func writeY4M(t *testing.T, path string, img image.Image, frames int) {
	t.Helper()
	const w, h = 640, 480
	canvas := image.NewGray(image.Rect(0, 0, w, h))
	draw.Draw(canvas, canvas.Bounds(), &image.Uniform{C: color.White}, image.Point{}, draw.Src)
	b := img.Bounds()
	at := image.Pt((w-b.Dx())/2, (h-b.Dy())/2)
	draw.Draw(canvas, image.Rectangle{Min: at, Max: at.Add(b.Size())}, img, b.Min, draw.Src)
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	out := bufio.NewWriter(f)
	fmt.Fprintf(out, "YUV4MPEG2 W%d H%d F10:1 Ip A1:1 C420jpeg\n", w, h)
	chroma := bytes.Repeat([]byte{128}, (w/2)*(h/2))
	for range frames {
		out.WriteString("FRAME\n")
		for y := range h {
			for x := range w {
				// Y' of a grey pixel in full-range (JPEG) YCbCr is its grey.
				out.WriteByte(canvas.GrayAt(x, y).Y)
			}
		}
		out.Write(chroma) // U
		out.Write(chroma) // V
	}
	require.NoError(t, out.Flush())
}

func TestTheScannerAppReadsATicketFromTheCameraGreenThenRedNamingTheFirstEntry(t *testing.T) {
	t.Parallel()
	// The gate's clock stands still at 19:02 UTC, the minute the code was
	// made: the code in the clip stays valid however long the test runs.
	at := time.Date(2026, 12, 31, 19, 2, 7, 0, time.UTC)
	clock := func() time.Time { return at }
	keys, err := manifest.KeysFromConfig(config.Default())
	require.NoError(t, err)
	secret, err := tickets.NewSecret()
	require.NoError(t, err)
	tk := manifest.Entry{ID: tickets.NewTicketID(), SectionID: "sec_floor", SeatID: "sec_floor-B-12", Secret: secret,
		BookingCode: "3f2a9c1b-0000-4000-8000-000000000001", Attendee: "ada@example.com"}
	data, err := manifest.Seal(manifest.Manifest{Header: manifest.Header{EventID: "evt_doors", Kind: manifest.KindFull,
		Version: at.Add(-time.Hour).UnixMicro(), CreatedAt: at.Add(-time.Hour), ExpiresAt: at.Add(12 * time.Hour)},
		Body: manifest.Body{Tickets: []manifest.Entry{tk}}}, keys)
	require.NoError(t, err)
	g := gate.StartForTest(t, gate.TestOptions{Manifest: data, Keys: &keys, Now: clock})

	payload, _ := tickets.Payload(tk.ID, tk.Secret, at) // the code, and when it stops being valid
	qr, err := notify.QRPNG(payload, 320)
	require.NoError(t, err)
	img, err := png.Decode(bytes.NewReader(qr))
	require.NoError(t, err)
	clip := filepath.Join(t.TempDir(), "ticket.y4m")
	writeY4M(t, clip, img, 5)

	code, _, err := g.Store.NewPairingCode(context.Background(), "North 3", at, 0)
	require.NoError(t, err)

	ctx := scannerBrowser(t, 3*time.Minute, clip)
	do(t, ctx, "open the scanner app: the pairing screen comes first",
		chromedp.Navigate(g.URL+"/"), chromedp.WaitVisible(css(`#pair-code`)))
	require.Equal(t, "pair", js(t, ctx, `document.body.dataset.screen`))
	do(t, ctx, "pair with the code encore gate pair printed",
		chromedp.SendKeys(css(`#pair-code`), gate.FormatPairingCode(code)),
		chromedp.Click(css(`#pair-form button`)),
		chromedp.WaitVisible(css(`#video`)))
	waitJS(t, ctx, `document.body.dataset.screen`, "scan", 10*time.Second)
	require.NotEmpty(t, js(t, ctx, `localStorage.getItem('encore.gate.token') || ''`))
	require.Equal(t, "North-3", js(t, ctx, `document.getElementById('gate-id').value`), "the gate is named for the scanner")

	// The camera films the ticket: jsQR decodes it (Linux Chromium has no
	// BarcodeDetector) and the gate lets the fan in.
	waitJS(t, ctx, `document.getElementById('result').dataset.result || ''`, "accepted", 45*time.Second)
	require.Equal(t, "jsQR", js(t, ctx, `document.getElementById('camera-status').dataset.decoder`))
	require.Equal(t, "ok", js(t, ctx, `document.getElementById('result').className`))
	require.Equal(t, "IN", js(t, ctx, `document.getElementById('verdict').textContent`))
	require.Contains(t, js(t, ctx, `document.getElementById('seat').textContent`), "Seat sec_floor-B-12")
	require.Equal(t, "rgb(10, 125, 44)", js(t, ctx, `getComputedStyle(document.getElementById('result')).backgroundColor`), "full-screen green")
	require.Equal(t, "true", js(t, ctx, `String(document.getElementById('result').getBoundingClientRect().height >= innerHeight)`))

	// The same code stays in view: once the ticket may be asked again the
	// answer is red, naming the first entry.
	waitJS(t, ctx, `document.getElementById('result').dataset.result || ''`, "rejected", 45*time.Second)
	require.Equal(t, "already_used", js(t, ctx, `document.getElementById('result').dataset.reason`))
	require.Equal(t, "bad", js(t, ctx, `document.getElementById('result').className`))
	require.Equal(t, "Already entered at 19:02 through gate North-3", js(t, ctx, `document.getElementById('reason').textContent`))
	require.Equal(t, "rgb(179, 18, 31)", js(t, ctx, `getComputedStyle(document.getElementById('result')).backgroundColor`), "full-screen red")

	// The live count shows the entry at this gate.
	do(t, ctx, "dismiss the answer", chromedp.Click(css(`#result`)))
	waitJS(t, ctx, `document.getElementById('counts').dataset.entered || ''`, "1", 10*time.Second)
	require.Contains(t, js(t, ctx, `document.getElementById('counts').textContent`), "This gate 1")
}

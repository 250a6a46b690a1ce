package notify

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/png"
	"sync"

	"rsc.io/qr/coding"
)

// qrQuietZone is the blank border around a QR symbol, in modules: the four
// the standard asks for, without which phone scanners miss the code on a
// dark email or page background.
const qrQuietZone = 4

// qrPalette is black modules on white, one bit a pixel.
var qrPalette = color.Palette{color.White, color.Black}

// QRPNG encodes content as a QR code (medium error correction, ~15% of the
// symbol recoverable) into a size×size PNG: whole pixels per module,
// centred, with a quiet zone of at least four modules. A size too small for
// one pixel per module gives the smallest image that has one instead. The
// API's ticket codes use it too.
func QRPNG(content string, size int) ([]byte, error) {
	code, err := qrSymbol(content)
	if err != nil {
		return nil, err
	}
	modules := code.Size + 2*qrQuietZone
	size = max(size, modules)
	scale := size / modules
	offset := (size-modules*scale)/2 + qrQuietZone*scale
	img := image.NewPaletted(image.Rect(0, 0, size, size), qrPalette) // all white (index 0)
	for y := range code.Size {
		for x := range code.Size {
			if !code.Black(x, y) {
				continue
			}
			for py := offset + y*scale; py < offset+(y+1)*scale; py++ {
				line := img.Pix[py*img.Stride:]
				for px := offset + x*scale; px < offset+(x+1)*scale; px++ {
					line[px] = 1
				}
			}
		}
	}
	// Default compression: 570 bytes for a 320-pixel ticket code where the
	// best gave 564, in about 0.95 ms a code instead of 1.65 ms (its search
	// for matches was a fifth of the time; BenchmarkQRPNG).
	var out bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.DefaultCompression, BufferPool: &qrBuffers}
	if err := enc.Encode(&out, img); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// qrSymbol is content's QR symbol at level M in the smallest version that
// holds it, in the mode that packs it best, under the mask the standard's
// penalty rules score lowest (ISO/IEC 18004, 7.8.3): any mask decodes, the
// lowest-scoring one avoids the long runs, blocks and finder-like shapes
// that make a camera misread the symbol.
func qrSymbol(content string) (*coding.Code, error) {
	var enc coding.Encoding
	switch {
	case coding.Num(content).Check() == nil:
		enc = coding.Num(content)
	case coding.Alpha(content).Check() == nil:
		enc = coding.Alpha(content)
	default:
		enc = coding.String(content)
	}
	v := coding.Version(coding.MinVersion)
	for enc.Bits(v) > v.DataBytes(coding.M)*8 {
		if v++; v > coding.MaxVersion {
			return nil, errors.New("notify: too long for a QR code")
		}
	}
	var best *coding.Code
	bestScore := 0
	for m := range coding.Mask(8) {
		plan, err := qrPlan(v, m)
		if err != nil {
			return nil, err
		}
		code, err := plan.Encode(enc)
		if err != nil {
			return nil, err
		}
		if score := qrPenalty(code); best == nil || score < bestScore {
			best, bestScore = code, score
		}
	}
	return best, nil
}

// qrPlans keeps each version and mask's module map (coding.NewPlan builds
// one module by module; Encode only reads it).
var qrPlans sync.Map // qrPlanKey -> *coding.Plan

type qrPlanKey struct {
	v coding.Version
	m coding.Mask
}

func qrPlan(v coding.Version, m coding.Mask) (*coding.Plan, error) {
	if p, ok := qrPlans.Load(qrPlanKey{v, m}); ok {
		return p.(*coding.Plan), nil
	}
	p, err := coding.NewPlan(v, coding.M, m)
	if err != nil {
		return nil, err
	}
	kept, _ := qrPlans.LoadOrStore(qrPlanKey{v, m}, p)
	return kept.(*coding.Plan), nil
}

// qrPenalty scores a masked symbol by the standard's four rules: runs of
// five or more modules of one colour in a row or column (N1 = 3, plus one
// for each module past five), 2×2 blocks of one colour (N2 = 3 each),
// finder-like 1:1:3:1:1 runs with four light modules on one side (N3 = 40
// each; the quiet zone counts as light), and the dark share's distance from
// half (N4 = 10 for each whole 5 %).
func qrPenalty(c *coding.Code) int {
	n := c.Size
	dark := make([]bool, n*n)
	for y := range n {
		for x := range n {
			dark[y*n+x] = c.Black(x, y)
		}
	}
	return qrMatrixPenalty(dark, n)
}

// qrMatrixPenalty is qrPenalty of an n×n matrix, row by row (true is dark).
func qrMatrixPenalty(dark []bool, n int) int {
	score, darkCount := 0, 0
	line := make([]bool, n)
	for i := range n {
		copy(line, dark[i*n:(i+1)*n])
		score += qrLinePenalty(line)
		for j := range n {
			line[j] = dark[j*n+i]
		}
		score += qrLinePenalty(line)
	}
	for y := range n {
		for x := range n {
			d := dark[y*n+x]
			if d {
				darkCount++
			}
			if x+1 < n && y+1 < n && dark[y*n+x+1] == d && dark[(y+1)*n+x] == d && dark[(y+1)*n+x+1] == d {
				score += 3
			}
		}
	}
	return score + qrDarkSharePenalty(darkCount, n*n)
}

// qrDarkSharePenalty is rule N4: 10 for each whole 5 % the dark share is
// from half (|100·dark/total − 50| / 5, in integers, rounded down once).
func qrDarkSharePenalty(dark, total int) int {
	d := 20*dark - 10*total
	return 10 * (max(d, -d) / total)
}

// qrFinderLike are the 1:1:3:1:1 patterns rule N3 looks for, with four light
// modules after or before them (true is dark).
var qrFinderLike = [2][11]bool{
	{true, false, true, true, true, false, true, false, false, false, false},
	{false, false, false, false, true, false, true, true, true, false, true},
}

// qrLinePenalty is rules N1 and N3 along one row or column. For N3 the line
// is seen with the quiet zone's four light modules at each end: a
// finder-like run at the symbol's edge has them there in every image.
func qrLinePenalty(line []bool) int {
	score, run := 0, 0
	for j, d := range line {
		if j > 0 && d == line[j-1] {
			run++
			continue
		}
		if run >= 5 {
			score += run - 2
		}
		run = 1
	}
	if run >= 5 {
		score += run - 2
	}
	var buf [177 + 2*qrQuietZone]bool // the largest version's side
	padded := buf[:len(line)+2*qrQuietZone]
	copy(padded[qrQuietZone:], line)
	for j := 10; j < len(padded); j++ {
		// Both patterns are dark, light, dark at their fifth to seventh
		// module: most windows fail that first.
		if padded[j-6] && !padded[j-5] && padded[j-4] {
			for _, p := range qrFinderLike {
				if [11]bool(padded[j-10:j+1]) == p {
					score += 40
				}
			}
		}
	}
	return score
}

// qrBuffers lets every QR code reuse the PNG encoder's buffers: without it
// each code (one per ticket e-mailed, one per fan's phone asking for its
// rotating code) allocated about 850 KB of deflate state for a PNG of a few
// hundred bytes.
var qrBuffers pngBuffers

// pngBuffers is a png.EncoderBufferPool over sync.Pool.
type pngBuffers struct{ pool sync.Pool }

func (p *pngBuffers) Get() *png.EncoderBuffer {
	b, _ := p.pool.Get().(*png.EncoderBuffer)
	return b
}

func (p *pngBuffers) Put(b *png.EncoderBuffer) { p.pool.Put(b) }

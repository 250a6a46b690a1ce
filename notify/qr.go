package notify

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"sync"

	"rsc.io/qr/coding"
)

// qrQuietZone is the blank border around a QR symbol, in modules: the four
// the standard asks for, without which phone scanners miss the code on a
// dark email or page background.
const qrQuietZone = 4

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
	return qrImage(code, size, scale, offset)
}

// qrImage writes the symbol as a one-bit greyscale PNG (ISO/IEC 15948):
// the header, one compressed image chunk and the end. image/png encodes a
// two-colour image through a call a pixel (ColorIndexAt) and was half of a
// code's time (BenchmarkQRPNG); here each row of modules is packed once
// and repeated for its scale's rows, and the rows compress to a few
// hundred bytes.
func qrImage(code *coding.Code, size, scale, offset int) ([]byte, error) {
	stride := 1 + (size+7)/8 // a filter byte (0, none), then 8 pixels a byte
	raw := make([]byte, size*stride)
	white := raw[:stride]
	for i := 1; i < stride; i++ {
		white[i] = 0xff // bit 1 is white in one-bit greyscale
	}
	if pad := size % 8; pad != 0 {
		white[stride-1] = 0xff << (8 - pad) // the last byte's unused bits stay 0
	}
	for y := range size {
		copy(raw[y*stride:(y+1)*stride], white)
	}
	for my := range code.Size {
		row := raw[(offset+my*scale)*stride:][:stride]
		for mx := range code.Size {
			if !code.Black(mx, my) {
				continue
			}
			for px := offset + mx*scale; px < offset+(mx+1)*scale; px++ {
				row[1+px/8] &^= 0x80 >> (px % 8)
			}
		}
		for k := 1; k < scale; k++ {
			copy(raw[(offset+my*scale+k)*stride:][:stride], row)
		}
	}

	out := bytes.NewBuffer(make([]byte, 0, 1024))
	out.WriteString("\x89PNG\r\n\x1a\n")
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], uint32(size))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(size))
	ihdr[8], ihdr[9] = 1, 0 // bit depth 1, colour type 0 (greyscale); compression, filter, interlace 0
	pngChunk(out, "IHDR", ihdr[:])
	var idat bytes.Buffer
	z := qrCompressors.Get().(*zlib.Writer)
	z.Reset(&idat)
	_, err := z.Write(raw)
	if err == nil {
		err = z.Close()
	}
	qrCompressors.Put(z)
	if err != nil {
		return nil, err
	}
	pngChunk(out, "IDAT", idat.Bytes())
	pngChunk(out, "IEND", nil)
	return out.Bytes(), nil
}

// pngChunk appends one chunk: length, type, data, CRC of type and data.
func pngChunk(out *bytes.Buffer, typ string, data []byte) {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(data)))
	out.Write(n[:])
	crc := crc32.NewIEEE()
	crc.Write([]byte(typ))
	crc.Write(data)
	out.WriteString(typ)
	out.Write(data)
	binary.BigEndian.PutUint32(n[:], crc.Sum32())
	out.Write(n[:])
}

// qrCompressors lets every QR code reuse a zlib writer: a new one allocates
// about 800 KB of deflate state to compress a few kilobytes of rows.
var qrCompressors = sync.Pool{New: func() any {
	z, _ := zlib.NewWriterLevel(nil, zlib.DefaultCompression)
	return z
}}

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

// qrLinePenalty is rules N1 and N3 along one row or column, read as runs
// of one colour. For N3 the line is seen with the quiet zone's four light
// modules at each end: a finder-like run at the symbol's edge has them
// there in every image. The standard's 1:1:3:1:1 pattern with four light
// modules after it (1011101 0000) is, in runs, a dark run of three with
// single light runs either side, then a single dark run and a light run of
// four or more; before it (0000 1011101), the mirror image; the outer dark
// run on the far side may be longer, as the pattern ends there.
func qrLinePenalty(line []bool) int {
	if len(line) == 0 {
		return 0
	}
	// runs[0] is light (the quiet zone at least), then colours alternate.
	var buf [177 + 3]int // the largest version's side, and the end zones
	runs := append(buf[:0], qrQuietZone)
	if !line[0] {
		runs = runs[:0]
	}
	score, start := 0, 0
	for j := 1; j <= len(line); j++ {
		if j < len(line) && line[j] == line[start] {
			continue
		}
		if n := j - start; n >= 5 {
			score += n - 2
		}
		runs = append(runs, j-start)
		start = j
	}
	if !line[0] {
		runs[0] += qrQuietZone
	}
	if line[len(line)-1] {
		runs = append(runs, qrQuietZone)
	} else {
		runs[len(runs)-1] += qrQuietZone
	}
	for i := 3; i+3 < len(runs); i += 2 { // dark runs with two runs on each side
		if runs[i] != 3 || runs[i-1] != 1 || runs[i+1] != 1 {
			continue
		}
		if runs[i+2] == 1 && runs[i+3] >= 4 {
			score += 40
		}
		if runs[i-2] == 1 && runs[i-3] >= 4 {
			score += 40
		}
	}
	return score
}

package notify

import (
	"bytes"
	"image/png"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"rsc.io/qr/coding"
)

// bits reads a line of modules written as 1 (dark) and 0 (light).
func bits(s string) []bool {
	out := make([]bool, len(s))
	for i, c := range s {
		out[i] = c == '1'
	}
	return out
}

func TestALineIsScoredByTheStandardsRunAndFinderRules(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		want       int
	}{
		{"no run of five", "1010110010", 0},
		{"a run of five scores three", "1000001", 3},
		{"each module past five scores one more", "01111111", 5},
		{"runs of both colours", "1111100000", 6},
		{"a finder-like run with four light modules after it", "11010111010000", 40},
		{"a finder-like run with four light modules before it", "00001011101011", 40},
		{"a finder-like run at the edge has the quiet zone beside it, on both sides", "1011101", 80},
		{"a finder-like run between dark modules is none", "11011101011", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, qrLinePenalty(bits(tc.line)))
		})
	}
}

func TestTheRunsScoreEveryLineAsTheStandardsWindowsDo(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	finders := 0
	for range 20000 {
		line := make([]bool, 21+4*rng.IntN(40)) // versions 1 to 40
		for j := range line {
			// Mostly short runs, so finder-like shapes are common; now and
			// then a long one for rule N1.
			if j == 0 || rng.IntN(10) > 0 {
				line[j] = rng.IntN(2) == 0
			} else {
				line[j] = line[j-1]
			}
		}
		want := qrLinePenaltyByWindows(line)
		require.Equal(t, want, qrLinePenalty(line), "line %v", line)
		if want >= 40 {
			finders++
		}
	}
	require.Greater(t, finders, 2000, "lines with a finder-like run")
}

// qrLinePenaltyByWindows is rules N1 and N3 as the standard words them:
// runs counted module by module, and every window of eleven modules of the
// line in its quiet zone compared with the two finder-like patterns.
func qrLinePenaltyByWindows(line []bool) int {
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
	padded := append(append(make([]bool, qrQuietZone), line...), make([]bool, qrQuietZone)...)
	for _, p := range []string{"10111010000", "00001011101"} {
		for j := 0; j+11 <= len(padded); j++ {
			if slices.Equal(padded[j:j+11], bits(p)) {
				score += 40
			}
		}
	}
	return score
}

func TestBlocksOfOneColourAndTheDarkShareAreScored(t *testing.T) {
	for _, tc := range []struct {
		name string
		rows []string
		want int
	}{
		// 3×3 all dark: four 2×2 blocks (12), all dark (100 % is ten
		// steps of 5 % from half: 100); no run of five, no finder.
		{"all dark", []string{"111", "111", "111"}, 12 + 100},
		// A checkerboard has no block and no run; five of nine dark
		// (55.6 %) is one whole step from half.
		{"checkerboard", []string{"101", "010", "101"}, 10},
		// One 2×2 block in the corner, four of nine dark (44.4 %).
		{"one block", []string{"110", "110", "000"}, 3 + 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var dark []bool
			for _, r := range tc.rows {
				dark = append(dark, bits(r)...)
			}
			require.Equal(t, tc.want, qrMatrixPenalty(dark, len(tc.rows)))
		})
	}
	for _, tc := range []struct {
		dark, total, want int
	}{
		{500, 1000, 0}, {455, 1000, 0}, {451, 1000, 0}, {450, 1000, 10}, {549, 1000, 0},
		{550, 1000, 10}, {399, 1000, 20}, {0, 100, 100}, {100, 100, 100},
	} {
		require.Equal(t, tc.want, qrDarkSharePenalty(tc.dark, tc.total), "%d dark of %d", tc.dark, tc.total)
	}
}

func TestTheSymbolTakesTheMaskThatScoresLowest(t *testing.T) {
	content := "https://tickets.example/#/booking/7d0c6a8e-5f43-4f7e-9b1a-3c2d1e0f9a8b"
	chosen, err := qrSymbol(content)
	require.NoError(t, err)
	scores := make([]int, 8)
	lowest := qrPenalty(chosen)
	v := (chosen.Size - 17) / 4
	for m := range 8 {
		plan, err := qrPlan(coding.Version(v), coding.Mask(m))
		require.NoError(t, err)
		code, err := plan.Encode(coding.String(content))
		require.NoError(t, err)
		s := qrPenalty(code)
		scores[m] = s
		require.GreaterOrEqual(t, s, lowest, "mask %d scores lower than the chosen one", m)
	}
	// For this content the first mask is not the best: a fixed mask fails.
	require.Less(t, lowest, scores[0], "scores by mask: %v", scores)
}

func TestThePNGHoldsTheSymbolModuleForModule(t *testing.T) {
	t.Parallel()
	const content = "https://tickets.example/#/booking/7d0c6a8e-5f43-4f7e-9b1a-3c2d1e0f9a8b"
	code, err := qrSymbol(content)
	require.NoError(t, err)
	for _, size := range []int{1, 256, 320, 333, 1000} { // 1: one pixel a module
		b, err := QRPNG(content, size)
		require.NoError(t, err)
		img, err := png.Decode(bytes.NewReader(b))
		require.NoError(t, err)
		side := img.Bounds().Dx()
		modules := code.Size + 2*qrQuietZone
		scale := side / modules
		offset := (side - modules*scale) / 2
		for y := range side {
			for x := range side {
				mx, my := (x-offset)/scale-qrQuietZone, (y-offset)/scale-qrQuietZone
				inside := x >= offset && y >= offset && mx >= 0 && my >= 0 && mx < code.Size && my < code.Size
				if r, _, _, _ := img.At(x, y).RGBA(); (r == 0) != (inside && code.Black(mx, my)) {
					t.Fatalf("size %d: pixel %d,%d is dark=%v", size, x, y, r == 0)
				}
			}
		}
	}
}

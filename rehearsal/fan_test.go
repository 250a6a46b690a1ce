package rehearsal

import (
	"context"
	"crypto/sha256"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAProofOfWorkSolutionHasTheAskedZeroBits(t *testing.T) {
	t.Parallel()
	c := challenge{Token: "tok.en", Difficulty: 12}
	sol, ok := solve(context.Background(), c)
	require.True(t, ok)
	h := sha256.Sum256([]byte(c.Token + ":" + sol))
	require.GreaterOrEqual(t, leadingZeroBits(h[:]), 12)
}

func TestLeadingZeroBitsCountsAcrossBytes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		b    []byte
		want int
	}{{[]byte{0x80}, 0}, {[]byte{0x01}, 7}, {[]byte{0x00, 0x10}, 11}, {[]byte{0x00, 0x00}, 16}} {
		require.Equal(t, tc.want, leadingZeroBits(tc.b), "%x", tc.b)
	}
}

func TestEveryFanRanksTheSameBestSeatsFirst(t *testing.T) {
	t.Parallel()
	seats := []seatView{
		{ID: "A-1", Row: "A", Number: 1, Status: "AVAILABLE"}, {ID: "A-2", Row: "A", Number: 2, Status: "SOLD"},
		{ID: "A-3", Row: "A", Number: 3, Status: "AVAILABLE"}, {ID: "A-4", Row: "A", Number: 4, Status: "AVAILABLE"},
		{ID: "A-5", Row: "A", Number: 5, Status: "AVAILABLE"},
		{ID: "B-1", Row: "B", Number: 1, Status: "AVAILABLE"}, {ID: "B-3", Row: "B", Number: 3, Status: "AVAILABLE"},
	}
	// Row A's middle is 3: A-3, then A-4 (distance 1; A-2 is sold), then.
	require.Equal(t, []string{"A-3", "A-4"}, bestSeats(seats, nil, 2))
	require.Equal(t, []string{"A-4", "A-1", "A-5"}, bestSeats(seats, map[string]bool{"A-3": true}, 3), "a seat known taken is skipped")
	require.Equal(t, []string{"A-3", "A-4", "A-1", "A-5", "B-1"}, bestSeats(seats, nil, 5), "then the next row")
	require.Nil(t, bestSeats(seats, nil, 7), "not enough left")
}

func TestAFanWantsOneToMostSeatsMostlyTwo(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	seen := map[int]int{}
	for range 10_000 {
		q := quantity(r, 4)
		require.True(t, q >= 1 && q <= 4, "%d", q)
		seen[q]++
	}
	require.Greater(t, seen[2], seen[1]+seen[3])
	for range 100 {
		require.Equal(t, 1, quantity(r, 1))
	}
}

func TestOwnCardNumbersAreLuhnValidAndDistinct(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for n := int64(0); n < 1000; n++ {
		num := VisaNumber(987654321000 + n)
		require.Len(t, num, 16)
		require.Equal(t, "4917", num[:4])
		sum := 0
		for i := len(num) - 1; i >= 0; i-- {
			d, err := strconv.Atoi(string(num[i]))
			require.NoError(t, err)
			if (len(num)-1-i)%2 == 1 {
				if d *= 2; d > 9 {
					d -= 9
				}
			}
			sum += d
		}
		require.Zero(t, sum%10, num)
		require.False(t, seen[num])
		seen[num] = true
	}
}

func TestTheMetricsOfTheEventAndTheProcessAreRead(t *testing.T) {
	t.Parallel()
	body := []byte(`# HELP encore_waitingroom_queue_depth Fans in line.
# TYPE encore_waitingroom_queue_depth gauge
encore_waitingroom_queue_depth{event="evt_a"} 1234
encore_waitingroom_queue_depth{event="evt_b"} 9
encore_waitingroom_capacity{event="evt_a"} 100
encore_waitingroom_sold_out{event="evt_a"} 1
http_requests_total{code="200",event="evt_a"} 5
process_resident_memory_bytes 2.5e+08
`)
	m := parseMetrics(body, "evt_a")
	require.Equal(t, 1234.0, m.get("encore_waitingroom_queue_depth"))
	require.Equal(t, 100.0, m.get("encore_waitingroom_capacity"))
	require.Equal(t, 1.0, m.get("encore_waitingroom_sold_out"))
	require.Equal(t, 2.5e8, m.get("process_resident_memory_bytes"))
	require.NotContains(t, m, "http_requests_total", "other labels are another series")
	require.True(t, m.get("encore_waitingroom_active_leases") != m.get("encore_waitingroom_active_leases"), "missing is NaN")
}

package store_test

import (
	"cmp"
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/store"
)

// The seats offered instead of taken ones are, in order, the free seats of
// the taken seat's row by distance, then the other rows' free seats by
// distance in seat number, then row, then number. The read looks near the
// taken seat first and at the whole section only when too few seats are
// free near it; on sections from almost empty to almost full, with one or
// two seats taken, it answers exactly what ranking every free seat of the
// section in Go answers.
func TestAlternativesAreTheNearestFreeSeatsHoweverFullTheSectionIs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := store.New(testenv.DB(t), store.Options{})
	ev := onSaleEvent(t, st, "evt_alt_", 12, 15, 0)
	sec := "sec_" + ev
	type seat struct {
		ID     string
		Row    string
		Number int
	}
	rows, err := st.Pool().Query(ctx, `SELECT id, row_label, number FROM seats WHERE section_id = $1`, sec)
	require.NoError(t, err)
	seats, err := pgx.CollectRows(rows, pgx.RowToStructByPos[seat])
	require.NoError(t, err)
	require.Len(t, seats, 180)

	rnd := rand.New(rand.NewPCG(7, 29))
	for round := range 40 {
		fullness := float64(round) / 40 // from empty to 97.5 % blocked
		var blocked []string
		free := map[string]bool{}
		for _, s := range seats {
			if rnd.Float64() < fullness {
				blocked = append(blocked, s.ID)
			} else {
				free[s.ID] = true
			}
		}
		_, err := st.Pool().Exec(ctx, `UPDATE seats SET status = CASE WHEN id = ANY($2) THEN 'BLOCKED' ELSE 'AVAILABLE' END
			WHERE section_id = $1`, sec, blocked)
		require.NoError(t, err)
		taken := []seat{seats[rnd.IntN(len(seats))]}
		if round%2 == 1 {
			taken = append(taken, seats[rnd.IntN(len(seats))])
		}
		var takenIDs []string
		ref := seat{Row: taken[0].Row, Number: taken[0].Number}
		for _, s := range taken {
			takenIDs = append(takenIDs, s.ID)
			ref.Row, ref.Number = min(ref.Row, s.Row), min(ref.Number, s.Number)
		}

		got, err := st.Holds.Alternatives(ctx, ev, takenIDs, takenIDs, len(takenIDs))
		require.NoError(t, err)

		var want []seat
		for _, s := range seats {
			if free[s.ID] && !slices.Contains(takenIDs, s.ID) {
				want = append(want, s)
			}
		}
		other := func(s seat) int {
			if s.Row == ref.Row {
				return 0
			}
			return 1
		}
		dist := func(s seat) int { return max(s.Number-ref.Number, ref.Number-s.Number) }
		slices.SortFunc(want, func(a, b seat) int {
			return cmp.Or(cmp.Compare(other(a), other(b)), cmp.Compare(dist(a), dist(b)), cmp.Compare(a.Row, b.Row),
				cmp.Compare(a.Number, b.Number))
		})
		want = want[:min(len(want), max(len(takenIDs), 2)*3)]
		wantIDs := []string{}
		for _, s := range want {
			wantIDs = append(wantIDs, s.ID)
		}
		if got == nil {
			got = []string{}
		}
		require.Equal(t, wantIDs, got, "round %d: %.0f %% blocked, taken %v", round, 100*fullness, takenIDs)
	}
}

package venues_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/venues"
)

func TestAPlaceIsLabelledAsTheVenuesSignsNameIt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		place store.Place
		want  string
	}{
		{store.Place{Section: "Lower 7", Row: "P", Number: 16}, "Lower 7, Row P, Seat 16"},
		{store.Place{Section: "Standing pit"}, "Standing pit"},
		{store.Place{Section: "Balcony", Row: "AA", Number: 1}, "Balcony, Row AA, Seat 1"},
	} {
		require.Equal(t, tc.want, venues.Label(tc.place))
	}
}

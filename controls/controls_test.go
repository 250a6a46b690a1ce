package controls_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/controls"
)

func patch(t *testing.T, body string) controls.Patch {
	t.Helper()
	var p controls.Patch
	require.NoError(t, json.Unmarshal([]byte(body), &p))
	return p
}

func ptr(n int) *int { return &n }

func TestAPatchChangesOnlyTheDialsItNames(t *testing.T) {
	t.Parallel()
	d := controls.Defaults("evt_x")
	d.AdmissionCapacity = ptr(50)
	got, err := patch(t, `{"sales_paused":true,"seatmap_cache_ttl_ms":0}`).Apply(d)
	require.NoError(t, err)
	require.True(t, got.SalesPaused)
	require.Equal(t, 0, *got.SeatmapCacheTTLms, "zero is a value, not absence")
	require.Equal(t, 50, *got.AdmissionCapacity, "untouched")
	require.True(t, got.LivePush, "untouched")

	got, err = patch(t, `{"admission_capacity":null}`).Apply(got)
	require.NoError(t, err)
	require.Nil(t, got.AdmissionCapacity, "null returns the dial to the configured default")
}

func TestABadPatchNamesEveryBadMemberAndAppliesNothing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body string
		fields     []string
	}{
		{"capacity out of range", `{"admission_capacity":0}`, []string{"admission_capacity"}},
		{"ttl too long and a switch set to null", `{"seatmap_cache_ttl_ms":600000,"live_push":null}`,
			[]string{"seatmap_cache_ttl_ms", "live_push"}},
		{"bounds crossed", `{"admission_capacity_min":50,"admission_capacity_max":10}`, []string{"admission_capacity_min"}},
		{"capacity outside its bounds", `{"admission_capacity":5,"admission_capacity_min":10}`, []string{"admission_capacity"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := patch(t, tc.body).Apply(controls.Defaults("evt_x"))
			var verr *controls.ValidationError
			require.ErrorAs(t, err, &verr)
			var fields []string
			for _, e := range verr.Errors {
				fields = append(fields, e.Field)
			}
			require.Equal(t, tc.fields, fields)
		})
	}
	_, err := patch(t, `{"reason":"nothing"}`).Apply(controls.Defaults("evt_x"))
	require.ErrorIs(t, err, controls.ErrEmptyPatch)
}

func TestTheOperatorsCapacityMovesTheAdaptiveBand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name             string
		d                controls.Dials
		capacity, lo, hi int
	}{
		{"defaults", controls.Defaults("e"), 100, 10, 400},
		{"a capacity inside the band", controls.Dials{AdmissionCapacity: ptr(50)}, 50, 10, 400},
		{"a capacity above the band widens it", controls.Dials{AdmissionCapacity: ptr(900)}, 900, 10, 900},
		{"explicit bounds", controls.Dials{AdmissionCapacity: ptr(50), CapacityMin: ptr(40), CapacityMax: ptr(60)}, 50, 40, 60},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, lo, hi := tc.d.Capacity(100, 10, 400)
			require.Equal(t, []int{tc.capacity, tc.lo, tc.hi}, []int{c, lo, hi})
		})
	}
}

func TestTheCacheTTLDialOverridesTheDefault(t *testing.T) {
	t.Parallel()
	require.Equal(t, 2*time.Second, controls.Defaults("e").CacheTTL(2*time.Second))
	require.Equal(t, 250*time.Millisecond, controls.Dials{SeatmapCacheTTLms: ptr(250)}.CacheTTL(2*time.Second))
}

package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/api/apitest"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/store"
)

// orgEvent is a published event of the club run by a fresh organisation,
// with its organiser's token.
type orgEvent struct {
	org, token, eventID string
}

func (s *adminStack) orgEvent(name string) orgEvent {
	s.t.Helper()
	org := "org_" + name + "_" + testenv.RandomSuffix()
	tok := s.token("owner_"+name, org, session.Organiser)
	return orgEvent{org: org, token: tok, eventID: s.event(tok, s.venue(tok, org))}
}

func (s *adminStack) createCode(e orgEvent, code string, percentOff int) apitest.Response {
	s.t.Helper()
	return s.do(http.MethodPost, "/v1/admin/events/"+e.eventID+"/promotions", e.token,
		map[string]any{"code": code, "percent_off": percentOff, "max_uses": 10})
}

// holdFloor holds one standing place (25.00) of e for fan with code.
func (s *adminStack) holdFloor(e orgEvent, fan, code string) apitest.Response {
	s.t.Helper()
	return s.do(http.MethodPost, "/v1/holds", s.fan(fan), map[string]any{"event_id": e.eventID,
		"section_id": store.SectionPrefix(e.eventID) + "floor", "quantity": 1, "promo_code": code})
}

func total(r apitest.Response) any { return r.Body["total"].(map[string]any)["amount"] }

func TestTwoOrganisationsBothRunTheCodeSummerAndEachFanGetsTheirOwnOrganisationsDiscount(t *testing.T) {
	t.Parallel()
	s := newAdminStack(t)
	a, b := s.orgEvent("a"), s.orgEvent("b")

	r := s.createCode(a, "SUMMER", 10)
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	r = s.createCode(b, "SUMMER", 50)
	require.Equal(t, http.StatusCreated, r.Status, "another organisation's code takes nothing: %s", r.Raw)
	r = s.createCode(b, "SUMMER", 20)
	require.Equal(t, http.StatusConflict, r.Status, "an event still runs a code once: %s", r.Raw)
	require.Contains(t, r.Body["detail"], "this event already has the code SUMMER")

	fanA := s.holdFloor(a, "fan_of_a", "SUMMER")
	require.Equal(t, http.StatusCreated, fanA.Status, string(fanA.Raw))
	require.EqualValues(t, 2250, total(fanA), "A's 10% off 25.00")
	fanB := s.holdFloor(b, "fan_of_b", "SUMMER")
	require.Equal(t, http.StatusCreated, fanB.Status, string(fanB.Raw))
	require.EqualValues(t, 1250, total(fanB), "B's 50% off 25.00")

	// Each use counts against its own organisation's code only; one account
	// may use both, each under its own per-user limit.
	both := s.holdFloor(b, "fan_of_a", "SUMMER")
	require.Equal(t, http.StatusCreated, both.Status, string(both.Raw))
	uses := func(e orgEvent) int {
		return s.count(`SELECT used FROM promotions WHERE event_id = $1 AND code = 'SUMMER'`, e.eventID)
	}
	require.Equal(t, 1, uses(a))
	require.Equal(t, 2, uses(b))

	// Disabling and releasing touch one organisation's code.
	r = s.do(http.MethodDelete, "/v1/admin/events/"+a.eventID+"/promotions/SUMMER", a.token, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, problemName("invalid-request"), problemType(s.holdFloor(a, "late_a", "SUMMER")))
	r = s.holdFloor(b, "late_b", "SUMMER")
	require.Equal(t, http.StatusCreated, r.Status, "B's SUMMER is still on: %s", r.Raw)
	rel := s.do(http.MethodDelete, "/v1/holds/"+fanB.Body["hold_id"].(string), s.fan("fan_of_b"), nil)
	require.Equal(t, http.StatusNoContent, rel.Status, string(rel.Raw))
	require.Equal(t, 2, uses(b), "the release gave B's use back")
	require.Equal(t, 1, uses(a), "and left A's alone")
}

func TestAnOrganisationLearnsNothingOfAnotherOrganisationsCodes(t *testing.T) {
	t.Parallel()
	s := newAdminStack(t)
	mine, theirs := s.orgEvent("mine"), s.orgEvent("theirs")
	secret := "SECRET" + testenv.RandomSuffix()
	r := s.createCode(theirs, secret, 30)
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))

	// Redeeming the other organisation's code on my event answers as a code
	// that does not exist, and no discount.
	other := s.holdFloor(mine, "prober", secret)
	none := s.holdFloor(mine, "prober2", "NOSUCH"+testenv.RandomSuffix())
	require.Equal(t, http.StatusUnprocessableEntity, other.Status, string(other.Raw))
	require.Equal(t, none.Status, other.Status)
	require.Equal(t, none.Body["detail"], other.Body["detail"])
	require.Equal(t, none.Body["errors"], other.Body["errors"])

	// Creating it is no conflict, and my listing shows only my codes.
	r = s.createCode(mine, secret, 5)
	require.Equal(t, http.StatusCreated, r.Status, "the other organisation's code is not revealed by a 409: %s", r.Raw)
	r = s.do(http.MethodGet, "/v1/admin/events/"+mine.eventID+"/promotions", mine.token, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Len(t, r.Body["promotions"], 1)
	require.EqualValues(t, 500, r.Body["promotions"].([]any)[0].(map[string]any)["discount_bps"])
}

package api_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/api"
	"github.com/encore-tickets/encore/api/apitest"
	"github.com/encore-tickets/encore/booking"
	"github.com/encore-tickets/encore/session"
)

// checkoutEdge is the fan API's checkout route under a return-URL policy;
// the checks under test answer before any booking is looked at.
func checkoutEdge(t *testing.T, returns api.ReturnURLs) (string, string) {
	t.Helper()
	issuer := session.NewIssuer("return-url-secret")
	ts := httptest.NewServer((&api.Server{Bookings: &booking.Service{}, Sessions: issuer, ReturnURLs: returns}).Handler())
	t.Cleanup(ts.Close)
	return ts.URL, issuer.Issue("asha", "phone", time.Now())
}

func TestACheckoutUnderProductionRefusesAReturnURLOffThePublicOriginNamingTheField(t *testing.T) {
	t.Parallel()
	base, fan := checkoutEdge(t, api.ReturnURLs{Origin: "https://tickets.example", NoLoopback: true})
	for _, u := range []string{
		"http://127.0.0.1:8080/#/booking/b1",
		"http://localhost/#/booking/b1",
		"http://[::1]:9090/debug/pprof/",
		"https://evil.example/#/booking/b1",
		"http://tickets.example/#/booking/b1",
		"https://tickets.example.evil.example/",
		"javascript:alert(1)",
	} {
		r := apitest.Do(t, http.MethodPost, base+"/v1/holds/"+uuid.NewString()+"/checkout", fan,
			map[string]any{"payment_method": "pm_card_visa", "return_url": u}, "Idempotency-Key", "k-"+uuid.NewString())
		require.Equal(t, http.StatusUnprocessableEntity, r.Status, u)
		require.Equal(t, "/problems/invalid-request", r.Body["type"], u)
		errs, _ := r.Body["errors"].([]any)
		require.NotEmpty(t, errs, u)
		require.Equal(t, "return_url", errs[0].(map[string]any)["field"], u)
	}
}

func TestACheckoutOutsideProductionStillAcceptsALoopbackReturnURL(t *testing.T) {
	t.Parallel()
	base, fan := checkoutEdge(t, api.ReturnURLs{Origin: "https://tickets.example"})
	for _, u := range []string{"http://127.0.0.1:8080/#/booking/b1", "https://tickets.example/#/booking/b1"} {
		r := apitest.Do(t, http.MethodPost, base+"/v1/holds/"+uuid.NewString()+"/checkout", fan,
			map[string]any{"payment_method": "pm_card_visa", "return_url": u}, "Idempotency-Key", strings.Repeat("k", 256))
		// Past the return_url check, the next one refuses the too long key.
		require.Equal(t, http.StatusUnprocessableEntity, r.Status, u)
		errs, _ := r.Body["errors"].([]any)
		require.NotEmpty(t, errs, u)
		require.Equal(t, "Idempotency-Key", errs[0].(map[string]any)["field"], u)
	}
}

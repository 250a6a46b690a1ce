package activities

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTheProviderSendsTheFanBackOnlyToTheAppsOwnOriginOrALoopbackHost(t *testing.T) {
	a := &Booking{ReturnURL: "https://tickets.example/v1/payments/return", PublicURL: "https://tickets.example"}
	for _, tc := range []struct{ requested, want string }{
		{"", a.ReturnURL},
		{"https://tickets.example/#/booking/b1", "https://tickets.example/#/booking/b1"},
		{"https://TICKETS.example/#/booking/b1", "https://TICKETS.example/#/booking/b1"},
		{"http://127.0.0.1:41234/#/booking/b1", "http://127.0.0.1:41234/#/booking/b1"},
		{"http://localhost:8080/#/booking/b1", "http://localhost:8080/#/booking/b1"},
		{"http://[::1]:8080/#/booking/b1", "http://[::1]:8080/#/booking/b1"},
		{"http://tickets.example/#/booking/b1", a.ReturnURL}, // another scheme is another origin
		{"https://evil.example/#/booking/b1", a.ReturnURL},
		{"https://tickets.example.evil.example/", a.ReturnURL},
		{"https://user@tickets.example/", a.ReturnURL},
		{"javascript:alert(1)", a.ReturnURL},
		{"/#/booking/b1", a.ReturnURL},
		{"https://tickets.example:8443/", a.ReturnURL},
	} {
		require.Equal(t, tc.want, a.returnTo(tc.requested), "requested %q", tc.requested)
	}
}

func TestInProductionTheProviderNeverSendsTheFanBackToALoopbackHost(t *testing.T) {
	t.Parallel()
	a := &Booking{ReturnURL: "https://tickets.example/v1/payments/return", PublicURL: "https://tickets.example", NoLoopbackReturn: true}
	for _, u := range []string{"http://127.0.0.1:41234/#/booking/b1", "http://localhost:8080/", "http://[::1]:8080/"} {
		require.Equal(t, a.ReturnURL, a.returnTo(u), u)
	}
	require.Equal(t, "https://tickets.example/#/booking/b1", a.returnTo("https://tickets.example/#/booking/b1"))
}

package rehearsal

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func valid() Config {
	c := Defaults()
	c.EventID = "evt_flash_sale"
	return c
}

func TestARehearsalRefusesEveryAddressOutsideLoopback(t *testing.T) {
	t.Parallel()
	for _, api := range []string{
		"http://10.0.0.5:8080", "http://192.168.1.10:8080", "http://172.16.0.1:8080", "http://8.8.8.8",
		"http://example.com:8080", "http://[2001:db8::1]:8080", "http://0.0.0.0:8080", "ftp://127.0.0.1/", "127.0.0.1:8080",
	} {
		t.Run(api, func(t *testing.T) {
			t.Parallel()
			c := valid()
			c.API = api
			err := c.Validate()
			require.Error(t, err)
			require.Contains(t, err.Error(), "api:")
			_, err = Run(context.Background(), c)
			require.Error(t, err, "Run refuses before sending anything")
		})
	}
}

func TestARehearsalAcceptsEveryLoopbackAddress(t *testing.T) {
	t.Parallel()
	for _, api := range []string{"http://127.0.0.1:8080", "http://127.42.7.9:18080", "http://[::1]:8080", "http://localhost:8080"} {
		t.Run(api, func(t *testing.T) {
			t.Parallel()
			c := valid()
			c.API = api
			require.NoError(t, c.Validate())
		})
	}
}

func TestThePaymentSandboxAndTheAdminListenerMustBeLoopbackToo(t *testing.T) {
	t.Parallel()
	c := valid()
	c.PSP, c.Admin = "http://10.1.2.3:12111", "http://203.0.113.9:9090"
	c.Admitters = []string{"http://127.0.0.1:9091", "http://198.51.100.4:9090"}
	err := c.Validate()
	require.ErrorContains(t, err, "psp:")
	require.ErrorContains(t, err, "admin:")
	require.ErrorContains(t, err, "admitter:")
}

func TestAChallengePageElsewhereIsNotFollowed(t *testing.T) {
	t.Parallel()
	require.True(t, isLoopbackURL("http://127.0.0.1:12111/checkout/pi_1/challenge"))
	require.False(t, isLoopbackURL("https://hooks.example.com/checkout/pi_1/challenge"))
}

func TestValidateNamesEveryMistakeAtOnce(t *testing.T) {
	t.Parallel()
	c := valid()
	c.EventID = ""
	c.Fans, c.ArrivalRate, c.Duration, c.Abandon, c.Decline, c.ThreeDS = 0, -1, 0, 1.5, 0.6, 0.6
	err := c.Validate()
	for _, want := range []string{"event:", "fans:", "arrival-rate:", "duration:", "abandon:", "decline + threeds:"} {
		require.ErrorContains(t, err, want)
	}
}

func TestEveryFanGroupHasItsOwnLoopbackSourceAddress(t *testing.T) {
	t.Parallel()
	seen := map[netip.Addr]bool{}
	for g := range 70_000 {
		a := sourceAddr(g)
		require.True(t, a.IsLoopback(), "%s", a)
		last := a.As4()[3]
		require.NotContains(t, []byte{0, 255}, last, "%s", a)
		require.False(t, seen[a], "%s twice", a)
		seen[a] = true
	}
}

func TestDefaultsFillOnlyWhatIsUnset(t *testing.T) {
	t.Parallel()
	c := Config{EventID: "evt", Fans: 10, ArrivalRate: 5, Duration: time.Second, Think: 3 * time.Second}.withDefaults()
	require.Equal(t, "http://127.0.0.1:8080", c.API)
	require.Equal(t, 3*time.Second, c.Think)
	require.Equal(t, 6, c.FansPerAddress)
	require.Zero(t, c.Abandon, "a zero fraction is a mix, not a missing flag")
	require.NoError(t, c.Validate())
}

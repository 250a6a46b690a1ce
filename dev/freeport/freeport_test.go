package freeport

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTakeGivesDistinctBindablePortsBelowTheEphemeralRange(t *testing.T) {
	t.Parallel()
	ports, err := Take("127.0.0.1", 20)
	require.NoError(t, err)
	require.Len(t, ports, 20)
	seen := map[int]bool{}
	for _, p := range ports {
		requireOnceFreeBelowTheEphemeralRange(t, seen, p)
	}
}

// requireOnceFreeBelowTheEphemeralRange checks that port p was not seen
// before, lies in the range handed out and can be listened on.
func requireOnceFreeBelowTheEphemeralRange(t *testing.T, seen map[int]bool, p int) {
	t.Helper()
	require.False(t, seen[p], "port %d handed out twice", p)
	seen[p] = true
	require.GreaterOrEqual(t, p, lowest)
	require.Less(t, p, EphemeralLow(), "an ephemeral port can be taken by any outgoing connection")
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	require.NoError(t, err, "port %d was not free", p)
	require.NoError(t, l.Close())
}

func TestTakeNeverRepeatsAPortWithinAProcess(t *testing.T) {
	t.Parallel()
	a, err := Take("", 50)
	require.NoError(t, err)
	b, err := Take("", 50)
	require.NoError(t, err)
	for _, p := range a {
		require.NotContains(t, b, p)
	}
}

// A Redis Cluster node's bus port is its port plus 10,000: both are free,
// reserved and below the ephemeral range, and no port of one pair is in
// another.
func TestTakeSpacedGivesPortsWhosePartnersAreFreeBelowTheEphemeralRangeToo(t *testing.T) {
	t.Parallel()
	ports, err := TakeSpaced("127.0.0.1", 6, 10000)
	require.NoError(t, err)
	require.Len(t, ports, 6)
	seen := map[int]bool{}
	for _, p := range ports {
		requireOnceFreeBelowTheEphemeralRange(t, seen, p)
		requireOnceFreeBelowTheEphemeralRange(t, seen, p+10000)
	}
	_, err = TakeSpaced("", 1, 0)
	require.Error(t, err)
}

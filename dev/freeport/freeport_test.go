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
		require.False(t, seen[p], "port %d handed out twice", p)
		seen[p] = true
		require.GreaterOrEqual(t, p, lowest)
		require.Less(t, p, EphemeralLow(), "an ephemeral port can be taken by any outgoing connection")
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		require.NoError(t, err, "port %d was not free", p)
		require.NoError(t, l.Close())
	}
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
		for _, q := range []int{p, p + 10000} {
			require.False(t, seen[q], "port %d handed out twice", q)
			seen[q] = true
			require.GreaterOrEqual(t, q, lowest)
			require.Less(t, q, EphemeralLow(), "an ephemeral port can be taken by any outgoing connection")
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(q)))
			require.NoError(t, err, "port %d was not free", q)
			require.NoError(t, l.Close())
		}
	}
	_, err = TakeSpaced("", 1, 0)
	require.Error(t, err)
}

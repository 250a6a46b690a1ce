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
		require.Less(t, p, ephemeralLow(), "an ephemeral port can be taken by any outgoing connection")
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

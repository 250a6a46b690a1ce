package devstack

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/freeport"
)

func TestAClusterURLThatAnswersIsUsedAsItIsAndNeverStopped(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	c, err := StartRedisCluster(ctx, ClusterOptions{Dir: t.TempDir(), Log: t.Logf})
	require.NoError(t, err)
	defer c.Close()
	require.Len(t, c.Addrs(), 6, "three masters with a replica each")

	// SearchPath empty: the test fails rather than start a local server.
	opts := Options{Dir: filepath.Join(t.TempDir(), ".encore"), RedisPort: freePort(t, 63910), SearchPath: []string{}, Log: newLog(t)}
	svc, err := EnsureRedis(ctx, opts, c.URL())
	require.NoError(t, err)
	require.False(t, svc.Started)
	require.Equal(t, c.URL(), svc.URL)
	require.NoError(t, svc.Stop())
	require.NoError(t, c.WaitHealthy(ctx, 0), "the cluster still serves every slot")
}

// A cluster's nodes listen below the ephemeral range, their bus ports
// (+10,000) too: a port the kernel may give an outgoing connection can be
// taken before the node binds it, and a node that loses its bus port aborts.
func TestClusterNodesAndTheirBusPortsListenBelowTheEphemeralRange(t *testing.T) {
	t.Parallel()
	ports, err := clusterPorts(0, 6)
	require.NoError(t, err)
	require.Len(t, ports, 6)
	for _, p := range ports {
		require.Less(t, p+10000, freeport.EphemeralLow(), "node %d's bus port", p)
	}
}

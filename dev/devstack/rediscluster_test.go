package devstack

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
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

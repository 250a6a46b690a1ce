package redisurl_test

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/internal/redisurl"
)

func TestEachURLFormNamesItsDeploymentOrSaysWhatIsWrong(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, url string
		kind      redisurl.Kind
		addrs     []string
		master    string
		db        int
		err       string
	}{
		{name: "one server", url: "redis://127.0.0.1:6379", kind: redisurl.Single, addrs: []string{"127.0.0.1:6379"}},
		{name: "one server, database 3, TLS", url: "rediss://u:p@cache.internal:6380/3", kind: redisurl.Single,
			addrs: []string{"cache.internal:6380"}, db: 3},
		{name: "a cluster with one seed", url: "redis+cluster://10.0.0.1:7000", kind: redisurl.Cluster,
			addrs: []string{"10.0.0.1:7000"}},
		{name: "a cluster with three seeds", url: "rediss+cluster://u:p@10.0.0.1:7000?addr=10.0.0.2:7000&addr=10.0.0.3:7000&dial_timeout=2s",
			kind: redisurl.Cluster, addrs: []string{"10.0.0.1:7000", "10.0.0.2:7000", "10.0.0.3:7000"}},
		{name: "sentinels", url: "redis+sentinel://u:secret@10.0.0.1:26379/2?master_name=encore&addr=10.0.0.2:26379",
			kind: redisurl.Sentinel, addrs: []string{"10.0.0.1:26379", "10.0.0.2:26379"}, master: "encore", db: 2},
		{name: "sentinels with their own password", url: "redis+sentinel://10.0.0.1:26379?master_name=encore&sentinel_password=s",
			kind: redisurl.Sentinel, addrs: []string{"10.0.0.1:26379"}, master: "encore"},

		{name: "empty", url: "", err: "empty Redis URL"},
		{name: "unknown scheme", url: "memcached://10.0.0.1:11211", err: `unknown scheme "memcached"`},
		{name: "unknown kind", url: "redis+shard://10.0.0.1:7000", err: `unknown scheme "redis+shard"`},
		{name: "no host", url: "redis+cluster:///", err: "names no host"},
		{name: "a database on a cluster", url: "redis+cluster://10.0.0.1:7000/4", err: "only database 0"},
		{name: "a bad seed", url: "redis+cluster://10.0.0.1:7000?addr=nowhere", err: "unable to parse addr param"},
		{name: "an unknown option", url: "redis+cluster://10.0.0.1:7000?colour=red", err: "unexpected option: colour"},
		{name: "sentinel without a master name", url: "redis+sentinel://10.0.0.1:26379", err: "master_name=NAME"},
		{name: "sentinel with the password in the query", url: "redis+sentinel://10.0.0.1:26379?master_name=m&password=x",
			err: "user:password@"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := redisurl.Parse(c.url)
			if c.err != "" {
				require.ErrorContains(t, err, c.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.kind, got.Kind)
			require.Equal(t, c.addrs, got.Addrs())
			require.Equal(t, c.master, got.MasterName())
			require.Equal(t, c.db, got.DB())
		})
	}
}

func TestAnErrorNeverRepeatsThePassword(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"redis+cluster://u:hunter2@10.0.0.1:7000/9", "redis+sentinel://u:hunter2@h:1", "redis://u:hunter2@h:1/x y%zz"} {
		_, err := redisurl.Parse(u)
		require.Error(t, err)
		require.NotContains(t, err.Error(), "hunter2")
	}
}

func TestTheClientMatchesTheDeploymentAndCarriesTheCredentials(t *testing.T) {
	t.Parallel()
	c, err := redisurl.Open("redis+cluster://a:b@127.0.0.1:1?addr=127.0.0.1:2", redisurl.Timeouts{})
	require.NoError(t, err)
	defer c.Close()
	cc, ok := c.(*redis.ClusterClient)
	require.True(t, ok, "a cluster URL opens a cluster client, got %T", c)
	require.Equal(t, "b", cc.Options().Password)

	target, err := redisurl.Parse("redis+sentinel://app:pw@127.0.0.1:1?master_name=m&sentinel_password=sp")
	require.NoError(t, err)
	s := target.NewClient(redisurl.Timeouts{})
	defer s.Close()
	sc, ok := s.(*redis.Client)
	require.True(t, ok, "a Sentinel URL opens a failover client, got %T", s)
	require.Equal(t, "app", sc.Options().Username, "the URL's user info is the master's")
	require.Equal(t, "pw", sc.Options().Password)

	one, err := redisurl.Open("redis://127.0.0.1:1/5", redisurl.Timeouts{Read: 123})
	require.NoError(t, err)
	defer one.Close()
	require.Equal(t, 5, one.(*redis.Client).Options().DB)
	require.EqualValues(t, 123, one.(*redis.Client).Options().ReadTimeout)
}

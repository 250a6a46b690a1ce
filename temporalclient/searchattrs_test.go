package temporalclient_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/encore-tickets/encore/dev/temporalserver"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/temporalclient"
)

// A cluster Encore did not start knows none of the saga's search
// attributes; the server below is started without them, as such a cluster.
func TestEnsureNamespaceRegistersMissingSearchAttributesOnceAndRefusesWhatCannotWork(t *testing.T) {
	t.Parallel()
	srv := temporalserver.StartForTest(t, testenv.DatabaseURL(t))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := srv.NewClient(ctx, client.Options{})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	attrs := map[string]enums.IndexedValueType{
		"EncoreTestEvent": enums.INDEXED_VALUE_TYPE_KEYWORD,
		"EncoreTestUser":  enums.INDEXED_VALUE_TYPE_KEYWORD,
	}
	custom := func() map[string]enums.IndexedValueType {
		list, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: srv.Namespace()})
		require.NoError(t, err)
		return list.GetCustomAttributes()
	}
	require.NotContains(t, custom(), "EncoreTestEvent", "the cluster starts without them")

	require.NoError(t, temporalclient.EnsureNamespace(ctx, c, srv.Namespace(), attrs))
	got := custom()
	require.Equal(t, enums.INDEXED_VALUE_TYPE_KEYWORD, got["EncoreTestEvent"])
	require.Equal(t, enums.INDEXED_VALUE_TYPE_KEYWORD, got["EncoreTestUser"])
	require.NoError(t, temporalclient.EnsureNamespace(ctx, c, srv.Namespace(), attrs), "a second start changes nothing")

	err = temporalclient.EnsureNamespace(ctx, c, srv.Namespace(), map[string]enums.IndexedValueType{"EncoreTestEvent": enums.INDEXED_VALUE_TYPE_INT})
	require.ErrorContains(t, err, "EncoreTestEvent is registered as")
	err = temporalclient.EnsureNamespace(ctx, c, "no-such-namespace", attrs)
	require.ErrorContains(t, err, `"no-such-namespace" does not exist`)
}

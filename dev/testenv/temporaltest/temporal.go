// Package temporaltest gives a test package its own embedded Temporal
// server over the test cluster's PostgreSQL. It is apart from testenv so
// that only the packages whose tests run workflows link the Temporal server
// (a test binary with it is some 290 MB, and links for seconds).
package temporaltest

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/dev/devstack"
	"github.com/encore-tickets/encore/dev/temporalserver"
	"github.com/encore-tickets/encore/dev/testenv"
	"github.com/encore-tickets/encore/temporalclient"
	"github.com/encore-tickets/encore/workflows"
)

var (
	temporalOnce sync.Once
	temporalSrv  *temporalserver.Server
	temporalErr  error
)

// Temporal returns this package's embedded Temporal server (PostgreSQL
// persistence in databases of its own, Encore's search attributes
// registered), started on first use and stopped when the package's tests end.
func Temporal(tb testing.TB) *temporalserver.Server {
	tb.Helper()
	admin := testenv.AdminURL(tb)
	temporalOnce.Do(func() {
		name := "temporal_" + testenv.PackageTag() + "_" + testenv.RandomSuffix()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		temporalSrv, temporalErr = temporalserver.Start(ctx, temporalserver.Config{
			DatabaseURL:            admin,
			DatabaseName:           name,
			VisibilityDatabaseName: name + "_vis",
			FrontendAddress:        "127.0.0.1:0",
			DisableUI:              true,
			NumHistoryShards:       2,
			MaxConns:               6,
			VisibilityMaxConns:     3,
			Logger:                 slog.New(slog.NewTextHandler(io.Discard, nil)),
			SearchAttributes:       workflows.SearchAttributes,
		})
		testenv.AtExit(func() {
			if temporalSrv != nil {
				_ = temporalSrv.Stop()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = devstack.DropDatabase(ctx, admin, name)
			_ = devstack.DropDatabase(ctx, admin, name+"_vis")
		})
	})
	if temporalErr != nil {
		tb.Fatalf("temporaltest: Temporal: %v", temporalErr)
	}
	return temporalSrv
}

// TemporalClient dials this package's embedded Temporal server with the
// options every Encore command dials with (temporalclient.Options over the
// default configuration), so what tests write to history is encrypted with
// the development codec key, as encore dev's is. log may be nil. The client
// is closed when the test ends.
func TemporalClient(tb testing.TB, log *slog.Logger) client.Client {
	tb.Helper()
	srv := Temporal(tb)
	cfg := config.Default()
	cfg.TemporalNamespace = srv.Namespace()
	opts, err := temporalclient.Options(cfg, srv.FrontendAddress(), log)
	if err != nil {
		tb.Fatalf("temporaltest: Temporal client options: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		tb.Fatalf("temporaltest: dial Temporal: %v", err)
	}
	tb.Cleanup(c.Close)
	return c
}

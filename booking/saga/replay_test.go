package saga_test

import (
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/encore-tickets/encore/booking/saga"
)

// TestRecordedHistoriesReplay replays histories recorded on the embedded
// server (system's TestRecordHistories writes them) against today's workflow
// code: a change that would break running bookings fails here.
func TestRecordedHistoriesReplay(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no recorded histories in testdata")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflowWithOptions(saga.Booking, workflow.RegisterOptions{Name: saga.BookingWorkflowName})
			require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))), f))
		})
	}
}

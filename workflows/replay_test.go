package workflows_test

import (
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/temporalclient"
	"github.com/encore-tickets/encore/workflows"
)

// TestRecordedHistoriesReplay replays histories recorded on the embedded
// server (system's TestRecordHistories writes them) against today's workflow
// code: a change that would break running bookings fails here. They replay
// through the data and failure converters every worker uses: histories recorded before
// payloads were encrypted pass through it as they are, ones recorded since
// decrypt with the development key.
func TestRecordedHistoriesReplay(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no recorded histories in testdata")
	codec, err := temporalclient.Codec(config.Default())
	require.NoError(t, err)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{DataConverter: codec.DataConverter(),
				FailureConverter: temporalclient.FailureConverter(codec)})
			require.NoError(t, err)
			r.RegisterWorkflowWithOptions(workflows.Booking, workflow.RegisterOptions{Name: workflows.BookingWorkflowName})
			require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))), f))
		})
	}
}

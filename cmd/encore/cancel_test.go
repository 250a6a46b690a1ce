package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/store"
)

func TestTheCancelProgressBarFillsWithHandledBookings(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		job  store.Job
		want string
	}{
		{store.Job{Total: 10, Status: "running"}, "[          ] 0/10 refunded, 0 failed, running"},
		{store.Job{Total: 10, Done: 4, Failed: 1, Status: "running"}, "[#####     ] 4/10 refunded, 1 failed, running"},
		{store.Job{Total: 0, Status: "done"}, "[##########] 0/0 refunded, 0 failed, done"},
	} {
		require.Equal(t, c.want, progressBar(c.job, 10))
	}
}

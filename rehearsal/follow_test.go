package rehearsal

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A fan follows its booking as its page does: one read, then reads the
// API holds until the booking changes, each naming the last ETag; a held
// read answered 304 is neither a failure nor a reason to pause.
func TestAFanWaitsOnItsBookingAsItsPageDoes(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var asked []http.Header
	answers := []struct {
		hold         time.Duration
		code         int
		etag, status string
	}{
		{0, http.StatusOK, `"v1"`, "PENDING_PAYMENT"},
		{time.Second, http.StatusNotModified, `"v1"`, ""}, // held until the wait ran out, no change
		{0, http.StatusOK, `"v2"`, "AUTHORISED"},
		{0, http.StatusOK, `"v3"`, "PAID"},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.Header.Clone())
		n := len(asked) - 1
		mu.Unlock()
		if n >= len(answers) {
			http.Error(w, "asked too often", http.StatusTeapot)
			return
		}
		a := answers[n]
		time.Sleep(a.hold)
		w.Header().Set("ETag", a.etag)
		w.WriteHeader(a.code)
		if a.status != "" {
			_, _ = w.Write([]byte(`{"status":"` + a.status + `"}`))
		}
	}))
	t.Cleanup(srv.Close)

	rec := newRecorder(time.Now())
	rn := &run{rec: rec, edge: &edge{base: srv.URL, rec: rec,
		sem: make(chan struct{}, 1), queue: make(chan struct{}, 1), waits: make(chan struct{}, 1)}}
	f := &fan{run: rn, r: rand.New(rand.NewPCG(1, 2)), client: srv.Client(), token: "fan"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.True(t, f.follow(ctx, "b-1", 1, time.Now(), time.Now()), "PAID seen")

	require.Len(t, asked, len(answers))
	require.Empty(t, asked[0].Get("If-None-Match"), "the first read asks for the booking as it is")
	for i, want := range []string{`"v1"`, `"v1"`, `"v2"`} {
		require.Equal(t, want, asked[i+1].Get("If-None-Match"), "read %d names the last ETag", i+2)
		require.Equal(t, "wait=20", asked[i+1].Get("Prefer"), "read %d waits for a change", i+2)
	}
	require.Empty(t, rec.failures, "a held read answered 304 is no failure")
	require.EqualValues(t, 1, rec.n.paid.Load())
}

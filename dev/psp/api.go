package psp

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// emitCtx carries what events emitted by one action need: the request that
// caused them and the webhook faults that apply.
type emitCtx struct {
	reqID   string
	idemKey string
	faults  faultSet
	n       int // events emitted so far by this action
}

// apiCall is one API request being served.
type apiCall struct {
	emitCtx
	r    *http.Request
	form url.Values
}

// apiResult is what a handler produced.
type apiResult struct {
	status  int
	body    []byte
	store   bool // saved for idempotent replay (the endpoint began executing)
	losable bool // a confirm or capture: subject to TimeoutAfterSuccessRate
}

func okResult(v any) apiResult {
	return apiResult{status: http.StatusOK, body: mustJSON(v), store: true}
}

// errResult turns an error into a result. executed says whether the endpoint
// had begun executing; only then is the result saved for idempotent replay,
// as Stripe does.
func errResult(e *apiError, executed bool) apiResult {
	return apiResult{status: e.Status, body: errorBody(e.Err), store: executed}
}

const maxBody = 1 << 20

func (s *Server) newCall(r *http.Request) (*apiCall, *apiError) {
	c := &apiCall{r: r}
	c.reqID, _ = r.Context().Value(reqIDKey{}).(string)
	if r.Method == http.MethodPost {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		if err != nil {
			return nil, &apiError{Status: 400, Err: jsonError{Type: "invalid_request_error", Message: "Could not read the request body."}}
		}
		if len(body) > maxBody {
			return nil, &apiError{Status: 413, Err: jsonError{Type: "invalid_request_error", Message: "Request body too large."}}
		}
		f, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, &apiError{Status: 400, Err: jsonError{Type: "invalid_request_error",
				Message: "Invalid form-encoded request body: " + err.Error()}}
		}
		// Stripe also accepts parameters in the query string.
		for k, v := range r.URL.Query() {
			if _, dup := f[k]; !dup {
				f[k] = v
			}
		}
		c.form = f
	} else {
		c.form = r.URL.Query()
	}
	if h := r.Header.Values(FaultHeader); len(h) > 0 {
		f, err := parseFaults(strings.Join(h, ","))
		if err != nil {
			return nil, &apiError{Status: 400, Err: jsonError{Type: "invalid_request_error", Message: err.Error()}}
		}
		c.faults = f
	}
	return c, nil
}

func (s *Server) serverErrorBody() []byte {
	return errorBody(jsonError{Type: "api_error",
		Message: "Sandbox fault: internal server error, injected before the request was acted on; it is safe to retry."})
}

func writeServerError(w http.ResponseWriter, body []byte) {
	w.Header().Set("Stripe-Should-Retry", "true")
	writeJSON(w, http.StatusInternalServerError, body)
}

// serverFault reports whether the call gets an injected server error: asked
// for by its faults, or drawn at the configured rate.
func (s *Server) serverFault(c *apiCall) bool {
	return c.faults.serverError || s.chance(s.cfg.Faults.ServerErrorRate)
}

// writeServerFault answers an injected server error, before the request
// was acted on.
func (s *Server) writeServerFault(w http.ResponseWriter, r *http.Request) {
	s.log.Info("sandbox fault: server error", "method", r.Method, "path", r.URL.Path)
	writeServerError(w, s.serverErrorBody())
}

// reading wraps a GET endpoint: latency and server_error faults apply.
func (s *Server) reading(h func(c *apiCall) apiResult) http.HandlerFunc {
	return s.calling(func(w http.ResponseWriter, r *http.Request, c *apiCall) {
		if !s.sleepCtx(r.Context(), s.cfg.Faults.Latency+c.faults.latency) {
			s.writeUnavailable(w)
			return
		}
		if s.serverFault(c) {
			s.writeServerFault(w, r)
			return
		}
		res := func() apiResult {
			s.mu.Lock()
			defer s.mu.Unlock()
			return h(c)
		}()
		writeJSON(w, res.status, res.body)
	})
}

// calling reads the request into an apiCall for next, or answers what is
// wrong with it (authentication, the form, the fault header).
func (s *Server) calling(next func(w http.ResponseWriter, r *http.Request, c *apiCall)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, e := s.newCall(r)
		if e != nil {
			writeJSON(w, e.Status, errorBody(e.Err))
			return
		}
		next(w, r, c)
	}
}

func (s *Server) writeUnavailable(w http.ResponseWriter) {
	select {
	case <-s.closing:
		writeServerError(w, errorBody(jsonError{Type: "api_error", Message: "The payment sandbox is shutting down."}))
	default:
		// The client went away; nobody reads this.
		w.WriteHeader(499)
	}
}

// mutating wraps a POST endpoint with Stripe's idempotency semantics and
// the fault injection described in the package documentation.
func (s *Server) mutating(h func(c *apiCall) apiResult) http.HandlerFunc {
	return s.calling(func(w http.ResponseWriter, r *http.Request, c *apiCall) {
		key := strings.TrimSpace(r.Header.Get("Idempotency-Key"))
		if key != "" {
			w.Header().Set("Idempotency-Key", key)
		}
		c.idemKey = key
		// An API switched off at runtime answers before anything else,
		// replays included: nothing is looked up, nothing is stored.
		if kind := s.unavailable(r.Pattern); kind != "" {
			s.writeUnavailableFault(w, r, kind)
			return
		}

		var rec *idemRecord
		if key != "" {
			s.mu.Lock()
			var replay *idemRecord
			var e *apiError
			rec, replay, e = s.idemBeginLocked(key, r.Method+" "+r.URL.Path, canonicalParams(c.form), c.reqID)
			s.mu.Unlock()
			if e != nil {
				if e.Status == http.StatusConflict {
					w.Header().Set("Stripe-Should-Retry", "true")
				}
				writeJSON(w, e.Status, errorBody(e.Err))
				return
			}
			if replay != nil {
				s.sleepCtx(r.Context(), s.cfg.Faults.Latency+c.faults.latency)
				w.Header().Set("Idempotent-Replayed", "true")
				w.Header().Set("Original-Request", replay.RequestID)
				writeJSON(w, replay.Status, replay.body())
				return
			}
		}
		abort := func() {
			if rec != nil {
				s.mu.Lock()
				if rec.inflight {
					s.idemAbortLocked(rec)
				}
				s.mu.Unlock()
			}
		}
		// Whatever happens (even a panic), the key must not stay in flight.
		defer abort()

		s.mu.Lock()
		mf, e := s.metadataFaultsLocked(c)
		s.mu.Unlock()
		if e != nil {
			abort()
			writeJSON(w, e.Status, errorBody(e.Err))
			return
		}
		c.faults = c.faults.merge(mf)

		// Latency is spent before acting. Like a real provider, the sandbox
		// carries on if the client gives up meanwhile: that is how a
		// timeout after success happens in real life.
		if d := s.cfg.Faults.Latency + c.faults.latency; d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-s.closing:
				t.Stop()
				abort()
				s.writeUnavailable(w)
				return
			}
		}
		if s.serverFault(c) {
			abort()
			s.writeServerFault(w, r)
			return
		}

		res := func() apiResult {
			s.mu.Lock()
			defer s.mu.Unlock()
			defer s.commitLocked()
			res := h(c)
			if rec != nil {
				if res.store {
					s.idemCompleteLocked(rec, res)
				} else {
					s.idemAbortLocked(rec)
				}
			}
			return res
		}()

		if res.status < 300 && (c.faults.timeout || (res.losable && (s.chance(s.cfg.Faults.TimeoutAfterSuccessRate) ||
			s.chance(s.lossOverride())))) {
			s.loseResponse(w, r, c.faults)
			return
		}
		writeJSON(w, res.status, res.body)
	})
}

// loseResponse simulates a provider that acted but whose answer never
// reached the client.
func (s *Server) loseResponse(w http.ResponseWriter, r *http.Request, f faultSet) {
	mode := f.timeoutMode
	if mode == "" {
		mode = s.cfg.Faults.TimeoutMode
	}
	if s.lossOverride() > 0 && f.timeoutMode == "" {
		mode = TimeoutDrop // a drill's loss: the client learns at once and retries
	}
	hold := f.timeoutHold
	if hold == 0 {
		hold = s.cfg.Faults.TimeoutHold
	}
	s.log.Info("sandbox fault: response lost after success", "method", r.Method, "path", r.URL.Path, "mode", mode,
		"idempotency_key", r.Header.Get("Idempotency-Key"))
	if mode == TimeoutHold {
		t := time.NewTimer(hold)
		select {
		case <-r.Context().Done():
		case <-t.C:
		case <-s.closing:
		}
		t.Stop()
	}
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// metadataFaultsLocked finds the faults configured on the intent a mutating
// call acts on. The update endpoint is exempt, so a fault can be removed;
// the create call only takes the webhook faults, so that server_error or
// timeout_after_success set at creation hit the intent's later calls.
func (s *Server) metadataFaultsLocked(c *apiCall) (faultSet, *apiError) {
	switch c.r.Pattern {
	case "POST /v1/payment_intents/{id}":
		return faultSet{}, nil
	case "POST /v1/payment_intents":
		if v := c.form.Get("metadata[" + FaultMetadataKey + "]"); v != "" {
			f, err := parseFaults(v)
			if err != nil {
				return f, invalidParam("metadata["+FaultMetadataKey+"]", err.Error())
			}
			// The intent's API faults apply to its later calls; the
			// create itself only gets the webhook faults.
			return faultSet{duplicate: f.duplicate, outOfOrder: f.outOfOrder, delay: f.delay, hasDelay: f.hasDelay}, nil
		}
		return faultSet{}, nil
	case "POST /v1/refunds":
		id := c.form.Get("payment_intent")
		if id == "" {
			if ch := s.charges[c.form.Get("charge")]; ch != nil {
				id = ch.PaymentIntent
			}
		}
		if pi := s.intents[id]; pi != nil {
			return metadataFaults(pi.Metadata), nil
		}
		return faultSet{}, nil
	}
	if pi := s.intents[c.r.PathValue("id")]; pi != nil {
		return metadataFaults(pi.Metadata), nil
	}
	return faultSet{}, nil
}

// ---- idempotency ----

// IdempotencyTTL is how long idempotency keys are kept, as at Stripe.
const IdempotencyTTL = 24 * time.Hour

// idemRecord is a stored idempotent result.
type idemRecord struct {
	Key       string `json:"key"` // scope:key
	Endpoint  string `json:"endpoint"`
	Params    string `json:"params"`
	Status    int    `json:"status"`
	BodyGz    []byte `json:"body_gz"` // the response body, gzip-compressed
	RequestID string `json:"request_id"`
	Created   int64  `json:"created"` // Unix seconds
	inflight  bool
}

func (s *Server) idemBeginLocked(key, endpoint, params, reqID string) (rec, replay *idemRecord, e *apiError) {
	if len(key) > 255 {
		return nil, nil, invalidParam("Idempotency-Key", "Idempotency-Key must be at most 255 characters long.")
	}
	mk := s.scope + ":" + key
	now := s.now()
	if old := s.idem[mk]; old != nil {
		if !old.inflight && now.Sub(time.Unix(old.Created, 0)) > IdempotencyTTL {
			delete(s.idem, mk)
			s.logRec(record{Op: opDelIdem, ID: mk})
		} else {
			switch {
			case old.inflight:
				return nil, nil, &apiError{Status: http.StatusConflict, Err: jsonError{Type: "idempotency_error", Code: "idempotency_key_in_use",
					Message: fmt.Sprintf("There is currently another in-progress request using this Idempotency Key (that probably means you submitted twice, and the other request is still going through): %s. Please try again later.", key)}}
			case old.Endpoint != endpoint:
				return nil, nil, &apiError{Status: http.StatusBadRequest, Err: jsonError{Type: "idempotency_error",
					Message: fmt.Sprintf("Keys for idempotent requests can only be used for the same endpoint they were first used for ('%s' vs '%s'). Try using a key other than '%s' if you meant to execute a different request.", old.Endpoint, endpoint, key)}}
			case old.Params != params:
				return nil, nil, &apiError{Status: http.StatusBadRequest, Err: jsonError{Type: "idempotency_error",
					Message: fmt.Sprintf("Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '%s' if you meant to execute a different request.", key)}}
			}
			return nil, old, nil
		}
	}
	rec = &idemRecord{Key: mk, Endpoint: endpoint, Params: params, RequestID: reqID, Created: now.Unix(), inflight: true}
	s.idem[mk] = rec
	return rec, nil, nil
}

func (s *Server) idemAbortLocked(rec *idemRecord) {
	rec.inflight = false
	if s.idem[rec.Key] == rec {
		delete(s.idem, rec.Key)
	}
}

func (s *Server) idemCompleteLocked(rec *idemRecord, res apiResult) {
	rec.inflight = false
	rec.Status = res.status
	rec.BodyGz = gzipBytes(res.body)
	s.idem[rec.Key] = rec
	s.logRec(record{Op: opPutIdem, Idem: rec})
}

// pruneIdemLocked drops expired idempotency keys.
func (s *Server) pruneIdemLocked() {
	now := s.now()
	for k, rec := range s.idem {
		if !rec.inflight && now.Sub(time.Unix(rec.Created, 0)) > IdempotencyTTL {
			delete(s.idem, k)
		}
	}
}

// gzipWriters lets every stored response reuse a compressor: a new one
// allocated about 1 MB of deflate state for each payment call, half of all
// that encore dev allocated while it sold (3.2 MB a paid booking).
var gzipWriters = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed)
	return zw
}}

func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzipWriters.Get().(*gzip.Writer)
	zw.Reset(&buf)
	_, _ = zw.Write(b)
	_ = zw.Close()
	gzipWriters.Put(zw)
	return buf.Bytes()
}

func (rec *idemRecord) body() []byte {
	zr, err := gzip.NewReader(bytes.NewReader(rec.BodyGz))
	if err != nil {
		return errorBody(jsonError{Type: "api_error", Message: "stored idempotent response is unreadable"})
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		return errorBody(jsonError{Type: "api_error", Message: "stored idempotent response is unreadable"})
	}
	return b
}

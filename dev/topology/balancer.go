package topology

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Balancer is the load balancer in front of the APIs, as a deployment has
// one: requests go round robin, and a request no backend answered (a
// refused or reset connection: the process is gone) is sent to the next
// one; a WebSocket upgrade is proxied whole to one backend. Each request
// carries its client's address in X-Forwarded-For, so that the APIs
// (trusting the balancer's address, ENCORE_TRUSTED_PROXIES) count every
// fan's own address in their per-address limits. It carries the
// sandbox's webhooks and, with encore dev --split, the fans.
type Balancer struct {
	srv      *http.Server
	ln       net.Listener
	mu       sync.RWMutex
	backends []string
	next     atomic.Uint64
	client   *http.Client
}

// NewBalancer listens on addr ("": a free loopback port).
func NewBalancer(addr string) (*Balancer, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	// Warm connections to the APIs, as a real balancer keeps: a new one a
	// request would leave a port in TIME_WAIT each and run out under a sale.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 512, 256
	b := &Balancer{ln: ln, client: &http.Client{Timeout: 30 * time.Second, Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	b.srv = &http.Server{Handler: b, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = b.srv.Serve(ln) }()
	return b, nil
}

// URL is the balancer's base URL.
func (b *Balancer) URL() string { return "http://" + b.ln.Addr().String() }

// Add puts a backend (a base URL) behind the balancer.
func (b *Balancer) Add(base string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.backends = append(b.backends, base)
}

// Close stops listening.
func (b *Balancer) Close() { _ = b.srv.Close() }

// ServeHTTP forwards r to a backend that answers.
func (b *Balancer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
		return
	}
	b.mu.RLock()
	backends := append([]string(nil), b.backends...)
	b.mu.RUnlock()
	if len(backends) == 0 {
		http.Error(w, "no backend", http.StatusBadGateway)
		return
	}
	start := int(b.next.Add(1))
	if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		// A socket lives on one backend; if it dies, the client reconnects
		// through the balancer to another. An upgrade cannot be sent again
		// once proxied, so the backend is picked by a connection it accepts
		// first: a killed API is passed over, as for other requests.
		for i := range backends {
			u, err := url.Parse(backends[(start+i)%len(backends)])
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			conn, err := net.DialTimeout("tcp", u.Host, time.Second)
			if err != nil {
				continue
			}
			_ = conn.Close()
			httputil.NewSingleHostReverseProxy(u).ServeHTTP(w, r)
			return
		}
		http.Error(w, "no backend answered", http.StatusBadGateway)
		return
	}
	var lastErr error
	for i := range backends {
		base := backends[(start+i)%len(backends)]
		req, err := http.NewRequestWithContext(r.Context(), r.Method, base+r.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req.Header = r.Header.Clone()
		if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
			req.Header.Set("X-Forwarded-For", strings.Join(append(r.Header.Values("X-Forwarded-For"), host), ", "))
		}
		resp, err := b.client.Do(req)
		if err != nil {
			lastErr = err
			if unanswered(err) {
				continue
			}
			break
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
		return
	}
	http.Error(w, "no backend answered: "+errorText(lastErr), http.StatusBadGateway)
}

// unanswered: the backend never took the request (it is down), so another
// may safely take it.
func unanswered(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func errorText(err error) string {
	if err == nil {
		return "none"
	}
	return err.Error()
}

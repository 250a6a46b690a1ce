package temporalserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/temporalio/ui-server/v2/server/api"
	"github.com/temporalio/ui-server/v2/server/auth"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	"github.com/temporalio/ui-server/v2/server/cors"
	"github.com/temporalio/ui-server/v2/server/csrf"
	"github.com/temporalio/ui-server/v2/server/headers"
	"github.com/temporalio/ui-server/v2/server/route"
	"github.com/temporalio/ui-server/v2/ui"
)

// uiServer is the embedded Temporal Web UI.
//
// It assembles the handler from the ui-server module's own packages exactly as
// server.NewServer (ui-server v2.54.1) does, but serves it on a listener this
// package owns. server.Server.Start would bind the port itself and, on a bind
// error, call echo's Logger.Fatal, which exits the process; here a busy port is
// an ordinary error from Start, and Stop shuts the listener down gracefully.
type uiServer struct {
	http     *http.Server
	listener net.Listener
	done     chan struct{}
}

type staticUIConfig struct{ cfg *uiconfig.Config }

func (s staticUIConfig) GetConfig() (*uiconfig.Config, error) { return s.cfg, nil }

// UIConfig is what the Web UI serves.
type UIConfig struct {
	// FrontendAddress is the frontend the UI calls, forwarding its signed-in
	// user's access token.
	FrontendAddress string
	// Namespace is the one the UI opens by default.
	Namespace string
	// CodecEndpoint and CodecToken are Config's.
	CodecEndpoint, CodecToken string
	// SignIn is where users sign in (signin.go).
	SignIn SignIn
}

// startUI serves the UI on ln; it closes ln if it fails. A non-empty
// codecEndpoint is the codec server the UI's pages call to show payloads
// decoded; with codecToken the pages call the UI's own /codec instead,
// which adds the bearer (codecProxy). Every page asks for sign-in first
// (signin.go).
func startUI(ln net.Listener, uc UIConfig) (*uiServer, error) {
	frontendAddr, namespace, codecEndpoint, codecToken := uc.FrontendAddress, uc.Namespace, uc.CodecEndpoint, uc.CodecToken
	tcp := ln.Addr().(*net.TCPAddr)
	uiOrigin := "http://" + ln.Addr().String()
	signIn := uc.SignIn.withDefaults(uiOrigin)
	var proxy http.Handler
	if codecEndpoint != "" && codecToken != "" {
		target, err := url.Parse(codecEndpoint)
		if err != nil {
			_ = ln.Close()
			return nil, fmt.Errorf("temporalserver: codec endpoint: %w", err)
		}
		proxy = codecProxy(target, codecToken, uiOrigin, "http://localhost:"+strconv.Itoa(tcp.Port))
		codecEndpoint = uiOrigin + "/codec"
	}
	cfg := &uiconfig.Config{
		TemporalGRPCAddress: frontendAddr,
		Host:                tcp.IP.String(),
		Port:                tcp.Port,
		EnableUI:            true,
		DefaultNamespace:    namespace,
		DisableNewsFetch:    true,
		HideLogs:            true,
		// The browser calls the codec endpoint itself with the payloads it
		// shows: the UI server never holds the keys.
		Codec: uiconfig.Codec{Endpoint: codecEndpoint},
		// Sign-in is on: the pages send the signed-in user's tokens, the
		// API routes refuse a call without one, and an unsigned visitor goes
		// straight to the issuer. The provider is the one signin.go serves
		// the /auth routes for.
		Auth: uiconfig.Auth{Enabled: true, RedirectToProvider: true, Providers: []uiconfig.AuthProvider{{
			Label: "Encore", Type: "oidc", ProviderURL: signIn.Issuer, ClientID: signIn.ClientID,
			Scopes: signIn.Scopes, CallbackURL: signIn.callbackURL,
		}}},
		// RefreshInterval 0: the config is static, no reload goroutine.
		CORS: uiconfig.CORS{
			// Served over plain HTTP on loopback: let the CSRF cookie through.
			CookieInsecure: true,
			AllowOrigins:   []string{"http://" + ln.Addr().String(), "http://localhost:" + strconv.Itoa(tcp.Port)},
		},
	}
	handler, err := newUIHandler(cfg, signIn)
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	if proxy != nil {
		mux := http.NewServeMux()
		mux.Handle("/codec/", proxy)
		mux.Handle("/", handler)
		handler = mux
	}
	s := &uiServer{
		http: &http.Server{
			Handler:           handler,
			ReadHeaderTimeout: 10 * time.Second,
		},
		listener: ln,
		done:     make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		_ = s.http.Serve(ln) // returns http.ErrServerClosed after Shutdown
	}()
	return s, nil
}

// codecProxy forwards the UI's codec calls (POST /codec/decode, /encode)
// to target with the codec bearer. Only the UI's own pages may use it: a
// request from any other origin (a browser always names the origin of a
// cross-origin POST) is refused, so a page elsewhere cannot borrow the
// bearer, and the codec itself checks the origin again.
func codecProxy(target *url.URL, token string, uiOrigins ...string) http.Handler {
	rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(target)
		pr.Out.URL.Path = strings.TrimRight(target.Path, "/") + strings.TrimPrefix(pr.In.URL.Path, "/codec")
		pr.Out.URL.RawPath = ""
		pr.Out.Host = target.Host
		pr.Out.Header.Set("Authorization", "Bearer "+token)
	}}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !slices.Contains(uiOrigins, r.Header.Get("Origin")) {
			http.Error(w, "the codec proxy serves this UI's pages only", http.StatusForbidden)
			return
		}
		rp.ServeHTTP(w, r)
	})
}

// newUIHandler mirrors ui-server's server.NewServer.
// The /auth routes are signin.go's, not route.SetAuthRoutes: see there.
func newUIHandler(cfg *uiconfig.Config, signIn SignIn) (http.Handler, error) {
	cfgProvider, err := uiconfig.NewConfigProviderWithRefresh(staticUIConfig{cfg})
	if err != nil {
		return nil, fmt.Errorf("temporalserver: UI config: %w", err)
	}
	apiMiddleware := []api.Middleware{
		headers.WithForwardHeaders([]string{auth.AuthorizationExtrasHeader, "Caller-Type"}),
	}

	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.Logger.SetOutput(io.Discard)
	e.Use(middleware.Recover())
	e.Use(middleware.Gzip())
	e.Use(cors.CORSMiddleware(cors.CORSConfig{
		AllowHeaders: []string{
			echo.HeaderOrigin, echo.HeaderContentType, echo.HeaderAccept,
			echo.HeaderXCSRFToken, echo.HeaderAuthorization, auth.AuthorizationExtrasHeader,
			"Caller-Type",
		},
		AllowCredentials: true,
		ConfigProvider:   cfgProvider,
	}))
	e.Use(middleware.Secure())
	csrfCookieSecure := !cfg.CORS.CookieInsecure
	e.Use(csrf.EnsureTokenCookie(csrfCookieSecure))
	e.Use(middleware.CSRFWithConfig(csrf.MiddlewareConfig(cfgProvider, csrfCookieSecure)))

	e.Pre(route.PublicPath(cfg.PublicPath))
	route.SetHealthRoute(e)
	if err := route.SetAPIRoutes(e, cfgProvider, apiMiddleware); err != nil {
		return nil, fmt.Errorf("temporalserver: UI API routes: %w", err)
	}
	newSignInRoutes(signIn).register(e)

	assets, err := ui.Assets()
	if err != nil {
		return nil, fmt.Errorf("temporalserver: UI assets: %w", err)
	}
	assets, err = fs.Sub(assets, "local")
	if err != nil {
		return nil, fmt.Errorf("temporalserver: UI assets: %w", err)
	}
	if err := route.SetUIRoutes(e, cfg.PublicPath, assets); err != nil {
		return nil, fmt.Errorf("temporalserver: UI routes: %w", err)
	}
	route.SetRenderRoute(e, cfg.PublicPath)
	return e, nil
}

func (s *uiServer) URL() string { return "http://" + s.listener.Addr().String() }

func (s *uiServer) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.http.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = s.http.Close()
	}
	<-s.done
	return err
}

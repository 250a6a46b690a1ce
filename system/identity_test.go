package system_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/api"
	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/system"
)

func TestTheAPIRefusesToStartWithNeitherAnIssuerNorTheDemoLogin(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := config.Default()
	require.Nil(t, system.DemoIssuer(cfg), "the demo login is off by default")
	_, err := system.Identity(context.Background(), cfg, system.DemoIssuer(cfg), log)
	require.ErrorIs(t, err, system.ErrNoIdentityProvider)
	require.ErrorContains(t, err, "ENCORE_OIDC_ISSUER")

	cfg.DemoLogin, cfg.Env = true, config.Development
	cfg.PublicURL = "https://tickets.example/"
	dev := system.DemoIssuer(cfg)
	require.Equal(t, "https://tickets.example/dev/oidc", dev.URL())
	v, err := system.Identity(context.Background(), cfg, dev, log)
	require.NoError(t, err)
	_, err = v.Verify(context.Background(), dev.Issue("asha", "phone", time.Now()))
	require.NoError(t, err)
}

func TestAConfiguredIssuerWinsOverTheDemoLogin(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	mux := http.NewServeMux()
	idp := httptest.NewServer(mux)
	defer idp.Close()
	real := session.NewIssuerAt("the-idp", idp.URL, "encore")
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(real.Discovery())
	})
	mux.HandleFunc("/jwks.json", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(real.JWKS()) })

	cfg := config.Default()
	cfg.OIDCIssuer, cfg.DemoLogin = idp.URL, true
	require.Nil(t, system.DemoIssuer(cfg), "no demo login beside a real issuer")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	v, err := system.Identity(ctx, cfg, nil, log)
	require.NoError(t, err)
	_, err = v.Verify(ctx, real.Issue("asha", "phone", time.Now()))
	require.NoError(t, err)
	_, err = v.Verify(ctx, session.NewIssuer(cfg.SessionSecret.Reveal()).Issue("asha", "phone", time.Now()))
	require.ErrorIs(t, err, session.ErrInvalid, "a development token is not the issuer's")
}

func TestTheDemoLoginIsRefusedOutsideDevelopment(t *testing.T) {
	t.Parallel()
	for _, env := range []string{config.Staging, config.Production} {
		t.Run(env, func(t *testing.T) {
			t.Parallel()
			cfg := config.Default()
			cfg.Env, cfg.DemoLogin = env, true
			require.ErrorIs(t, system.CheckDemoLogin(cfg), system.ErrDemoLoginOutsideDevelopment)
			require.ErrorContains(t, cfg.CheckSecrets("api"), "ENCORE_DEMO_LOGIN is true")
			dev := system.DemoIssuer(cfg)
			require.Nil(t, dev, "no development issuer outside development")

			// Through HTTP: the API built as a process builds it serves no
			// demo login.
			srv := httptest.NewServer((&api.Server{Sessions: dev, Tokens: session.NewIssuer("x").Verifier()}).Handler())
			defer srv.Close()
			resp, err := http.Post(srv.URL+"/v1/sessions", "application/json",
				strings.NewReader(`{"user_id":"mallory","device_id":"laptop","roles":["admin"]}`))
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, http.StatusNotFound, resp.StatusCode)
		})
	}
	cfg := config.Default()
	cfg.Env, cfg.DemoLogin = config.Development, true
	require.NoError(t, system.CheckDemoLogin(cfg))
	require.NotNil(t, system.DemoIssuer(cfg))
}

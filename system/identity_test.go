package system_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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

	cfg.DemoLogin = true
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

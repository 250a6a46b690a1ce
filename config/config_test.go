package config_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/config"
)

func TestDefaultsNeedNoEnvironment(t *testing.T) {
	t.Parallel()
	c := config.Default()
	require.Equal(t, "127.0.0.1:8080", c.HTTPAddr)
	require.Equal(t, 2*time.Second, c.LockTimeout)
	require.True(t, c.HintsEnabled)
}

func TestABadValueNamesTheVariable(t *testing.T) {
	t.Parallel()
	_, err := config.LoadFrom(func(k string) (string, bool) {
		if k == "ENCORE_LOCK_TIMEOUT" {
			return "ten minutes", true
		}
		return "", false
	})
	require.ErrorContains(t, err, "ENCORE_LOCK_TIMEOUT")
}

func TestSecretsNeverPrint(t *testing.T) {
	t.Parallel()
	c := config.Default()
	c.DatabaseURL = "postgres://user:hunter2@db/encore"
	require.NotContains(t, fmt.Sprintf("%v %+v", c, c), "hunter2")
}

func TestReadmeDocumentsEveryVariable(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join("..", "README.md")) // go test runs in the package's folder
	require.NoError(t, err)
	require.Contains(t, string(readme), strings.TrimSpace(config.Table()), "regenerate the table with: go run ./cmd/encore config")
}

func TestEveryDevelopmentDefaultSecretIsGuardedInProduction(t *testing.T) {
	t.Parallel()
	c := config.Default()
	require.Equal(t, config.Production, c.Env, "a bare process is a production one")
	guarded := map[string]bool{}
	for _, cmd := range []string{"api", "worker", "gate", "manifest"} {
		err := c.CheckSecrets(cmd)
		require.Error(t, err, "encore %s refuses the defaults", cmd)
		for _, s := range config.DevSecrets() {
			if strings.Contains(err.Error(), s.Env+" is the development default") {
				guarded[s.Env] = true
			}
		}
	}
	v := reflect.ValueOf(c)
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		if f.Type == reflect.TypeOf(config.Secret("")) && f.Tag.Get("default") != "" {
			require.True(t, guarded[f.Tag.Get("env")], "%s has a development default that some command refuses", f.Tag.Get("env"))
		}
	}

	c.Env = config.Development
	for _, cmd := range []string{"api", "worker", "gate", "manifest"} {
		require.NoError(t, c.CheckSecrets(cmd))
	}
}

func TestAnUnknownEnvironmentIsRefused(t *testing.T) {
	t.Parallel()
	_, err := config.LoadFrom(func(k string) (string, bool) { return "prod", k == "ENCORE_ENV" })
	require.ErrorContains(t, err, "ENCORE_ENV")
}
func TestThePublicURLIsTheConfiguredOneOrTheListenAddressOnLoopback(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, public, listen, want, err string
	}{
		{name: "set", public: "https://tickets.example/", listen: "0.0.0.0:8080", want: "https://tickets.example"},
		{name: "unset, loopback listen", listen: "127.0.0.1:8080", want: "http://127.0.0.1:8080"},
		{name: "unset, every IPv4 address", listen: "0.0.0.0:8080", want: "http://127.0.0.1:8080"},
		{name: "unset, every IPv6 address", listen: "[::]:8080", want: "http://127.0.0.1:8080"},
		{name: "unset, no host", listen: ":8080", want: "http://127.0.0.1:8080"},
		{name: "relative", public: "tickets.example", listen: ":8080", err: "ENCORE_PUBLIC_URL"},
		{name: "another scheme", public: "ftp://tickets.example", listen: ":8080", err: "ENCORE_PUBLIC_URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := config.Default()
			c.PublicURL, c.HTTPAddr = tc.public, tc.listen
			got, err := c.EffectivePublicURL()
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestAProductionProcessRefusesToStartHalfConfigured(t *testing.T) {
	t.Parallel()
	full := config.Default()
	full.Env = config.Production
	full.DatabaseURL, full.RedisURL, full.TemporalAddress = "postgres://db/encore", "redis://redis:6379/0", "temporal:7233"
	for _, tc := range []struct {
		name    string
		command string
		change  func(*config.Config)
		missing []string
	}{
		{"everything set", "api", func(*config.Config) {}, nil},
		{"no Temporal address", "worker", func(c *config.Config) { c.TemporalAddress = "" }, []string{"ENCORE_TEMPORAL_ADDRESS"}},
		{"nothing set", "api", func(c *config.Config) { c.DatabaseURL, c.RedisURL, c.TemporalAddress = "", "", "" },
			[]string{"ENCORE_DATABASE_URL", "ENCORE_REDIS_URL", "ENCORE_TEMPORAL_ADDRESS"}},
		{"development provides them", "api", func(c *config.Config) { c.Env, c.TemporalAddress = config.Development, "" }, nil},
		{"the gate needs none of them", "gate", func(c *config.Config) { c.TemporalAddress = "" }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := full
			tc.change(&c)
			err := c.CheckDeployment(tc.command)
			if tc.missing == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, v := range tc.missing {
				require.ErrorContains(t, err, v, "every missing variable is named at once")
			}
		})
	}
}

func TestTheAPIRefusesAPublishableKeyThatCannotPayWithItsSecretKey(t *testing.T) {
	t.Parallel()
	real := config.Default()
	real.StripeKey = config.Secret("sk_live_" + strings.Repeat("a1", 20))
	for _, tc := range []struct {
		name, secret, publishable, says string
	}{
		{"a live pair", "sk_live_" + strings.Repeat("a1", 20), "pk_live_" + strings.Repeat("b2", 20), ""},
		{"a test pair", "sk_test_" + strings.Repeat("a1", 20), "pk_test_" + strings.Repeat("b2", 20), ""},
		{"a restricted live key with a live publishable key", "rk_live_" + strings.Repeat("a1", 20), "pk_live_" + strings.Repeat("b2", 20), ""},
		{"a test publishable key beside a live secret key", "sk_live_" + strings.Repeat("a1", 20), "pk_test_" + strings.Repeat("b2", 20), "is a test key but ENCORE_STRIPE_KEY a live key"},
		{"a live publishable key beside a test secret key", "sk_test_" + strings.Repeat("a1", 20), "pk_live_" + strings.Repeat("b2", 20), "is a live key but ENCORE_STRIPE_KEY a test key"},
		{"the sandbox's publishable key", "sk_live_" + strings.Repeat("a1", 20), config.SandboxPublishableKey, "the payment sandbox's"},
		{"no publishable key", "sk_live_" + strings.Repeat("a1", 20), "", "ENCORE_STRIPE_PUBLISHABLE_KEY is empty"},
		{"a secret key given as the publishable one", "sk_live_" + strings.Repeat("a1", 20), "sk_live_" + strings.Repeat("a1", 20), "is not a publishable key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := config.Default()
			c.StripeKey, c.StripePublishableKey = config.Secret(tc.secret), tc.publishable
			err := c.CheckSecrets("api")
			require.Error(t, err, "the other defaults are still refused")
			if tc.says == "" {
				require.NotContains(t, err.Error(), "ENCORE_STRIPE_PUBLISHABLE_KEY")
				return
			}
			require.ErrorContains(t, err, tc.says)
			require.NotContains(t, err.Error(), tc.secret, "the secret key is never printed")
			c.Env = config.Development
			require.NoError(t, c.CheckSecrets("api"), "development accepts any pair")
		})
	}
	require.True(t, real.LiveStripe())
	require.False(t, config.Default().LiveStripe(), "the sandbox's key is not a real account's")
}

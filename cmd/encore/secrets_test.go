package main

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/manifest"
	"github.com/encore-tickets/encore/system"
)

// generated runs encore keys generate and returns the variables it printed.
func generated(t *testing.T) map[string]string {
	t.Helper()
	code, out, errOut := run(t, newRootCmd(), "keys", "generate")
	require.Equal(t, 0, code, errOut)
	env := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		require.True(t, ok, "line %q is ENCORE_X=value", line)
		env[k] = v
	}
	return env
}

// productionEnv sets a complete production environment: a generated set of
// secrets, provider keys shaped like real ones, and no infrastructure, so a
// process that passes the checks stops at its first connection, before
// touching the network.
func productionEnv(t *testing.T) map[string]string {
	t.Helper()
	env := generated(t)
	env["ENCORE_STRIPE_KEY"] = "sk_test_" + strings.Repeat("4eC39HqLyjWDarjtT1zdp7dc", 3)
	env["ENCORE_STRIPE_WEBHOOK_SECRET"] = "whsec_" + strings.Repeat("k9", 16)
	env["ENCORE_STRIPE_PUBLISHABLE_KEY"] = "pk_test_" + strings.Repeat("TYooMQauvdEDq54NiTphI7jx", 3)
	env["ENCORE_DATABASE_URL"] = ""
	env["ENCORE_REDIS_URL"] = ""
	env["ENCORE_DATA_DIR"] = t.TempDir()
	return env
}

func setEnv(t *testing.T, env map[string]string) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
}

// secretCommand is a command guarded by the secrets check, with arguments
// that, past the check, fail at once without the network, and what that
// failure says.
type secretCommand struct {
	name   string
	args   func(t *testing.T) []string
	passed string
	uses   []string // at least these secrets are checked
}

func secretCommands() []secretCommand {
	return []secretCommand{
		{"api", func(*testing.T) []string { return []string{"api"} }, "ENCORE_DATABASE_URL",
			[]string{"ENCORE_SESSION_SECRET", "ENCORE_ROOM_PASS_SEED", "ENCORE_STRIPE_KEY", "ENCORE_STRIPE_WEBHOOK_SECRET", "ENCORE_TICKET_SEALING_KEY"}},
		{"worker", func(*testing.T) []string { return []string{"worker"} }, "ENCORE_DATABASE_URL",
			[]string{"ENCORE_ROOM_PASS_SEED", "ENCORE_STRIPE_KEY", "ENCORE_TICKET_SEALING_KEY"}},
		{"gate", func(t *testing.T) []string {
			return []string{"gate", "--db", filepath.Join(t.TempDir(), "ledger.db")}
		}, "holds 0 manifests", []string{"ENCORE_MANIFEST_KEY"}},
		{"manifest", func(t *testing.T) []string {
			return []string{"manifest", "inspect", filepath.Join(t.TempDir(), "missing.manifest")}
		}, "no such file", []string{"ENCORE_MANIFEST_KEY", "ENCORE_MANIFEST_SIGNING_SEED", "ENCORE_TICKET_SEALING_KEY"}},
	}
}

func TestProductionCommandsRefuseUnsafeSecretsNamingTheVariable(t *testing.T) {
	// Serial, subtests too: t.Setenv changes the process's environment.
	for _, c := range secretCommands() {
		var checked []string
		for _, s := range config.DevSecrets() {
			if slices.Contains(s.Use, c.name) {
				checked = append(checked, s.Env)
			}
		}
		require.Subset(t, checked, c.uses, "encore %s checks the secrets it uses", c.name)
		for _, env := range checked {
			def := ""
			for _, s := range config.DevSecrets() {
				if s.Env == env {
					def = s.Default
				}
			}
			for _, bad := range []struct{ name, value, says string }{
				{"its development default", def, "the development default"},
				{"empty", "", "empty"},
				{"31 bytes", strings.Repeat("x", 31), "shorter than 32 bytes"},
			} {
				t.Run("encore "+c.name+" with "+env+" "+bad.name, func(t *testing.T) {
					e := productionEnv(t)
					e[env] = bad.value
					setEnv(t, e)
					code, _, errOut := run(t, newRootCmd(), c.args(t)...)
					require.Equal(t, 1, code, errOut)
					require.Contains(t, errOut, env+" is "+bad.says)
					require.Contains(t, errOut, "encore keys generate")
					require.NotContains(t, errOut, c.passed)
					if bad.value != "" {
						require.NotContains(t, errOut, bad.value, "the message never prints a secret")
					}
				})
			}
		}
		t.Run("encore "+c.name+" names every offending variable in one message", func(t *testing.T) {
			e := productionEnv(t)
			for _, env := range checked {
				delete(e, env) // back to the development defaults
			}
			setEnv(t, e)
			code, _, errOut := run(t, newRootCmd(), c.args(t)...)
			require.Equal(t, 1, code, errOut)
			for _, env := range checked {
				require.Contains(t, errOut, env)
			}
		})
		t.Run("encore "+c.name+" runs on a generated set", func(t *testing.T) {
			setEnv(t, productionEnv(t))
			code, _, errOut := run(t, newRootCmd(), c.args(t)...)
			require.Equal(t, 1, code, errOut)
			require.Contains(t, errOut, c.passed)
			require.NotContains(t, errOut, "refuses")
		})
		t.Run("encore "+c.name+" accepts the development defaults with ENCORE_ENV=development", func(t *testing.T) {
			e := productionEnv(t)
			for _, s := range config.DevSecrets() {
				delete(e, s.Env)
			}
			e["ENCORE_ENV"] = config.Development
			e["ENCORE_GATE_VERIFY_KEY"] = ""
			setEnv(t, e)
			code, _, errOut := run(t, newRootCmd(), c.args(t)...)
			require.Equal(t, 1, code, errOut)
			require.Contains(t, errOut, c.passed)
		})
	}
}

func TestTheDefaultEnvironmentIsProduction(t *testing.T) {
	// Serial: t.Setenv changes the process's environment.
	require.Equal(t, config.Production, config.Default().Env)
	t.Setenv("ENCORE_ENV", "qa")
	code, _, errOut := run(t, newRootCmd(), "api")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "ENCORE_ENV")
}

func TestProductionAndStagingRefuseTheDemoLogin(t *testing.T) {
	// Serial, subtests too: t.Setenv changes the process's environment.
	for _, tc := range []struct {
		env, issuer string
		refused     bool
	}{
		{config.Production, "", true},
		{config.Production, "https://id.example.test", false},
		{config.Staging, "", true},
		{config.Staging, "https://id.example.test", false},
	} {
		t.Run(tc.env+" with issuer "+tc.issuer, func(t *testing.T) {
			e := productionEnv(t)
			e["ENCORE_ENV"], e["ENCORE_DEMO_LOGIN"], e["ENCORE_OIDC_ISSUER"] = tc.env, "true", tc.issuer
			setEnv(t, e)
			code, _, errOut := run(t, newRootCmd(), "api")
			require.Equal(t, 1, code, errOut)
			if tc.refused {
				require.Contains(t, errOut, "ENCORE_DEMO_LOGIN is true")
				require.NotContains(t, errOut, "half-configured")
				return
			}
			require.NotContains(t, errOut, "ENCORE_DEMO_LOGIN")
			require.Contains(t, errOut, "half-configured")
		})
	}
}

func TestTheGateRequiresAVerifyKeyInProduction(t *testing.T) {
	// Serial, subtests too: t.Setenv changes the process's environment.
	for _, tc := range []struct {
		name  string
		args  func(dir string) []string
		rests string // what it says once past the key check
	}{
		{"encore gate", func(dir string) []string { return []string{"gate", "--db", filepath.Join(dir, "l.db")} }, "holds 0 manifests"},
		{"encore gate import", func(dir string) []string {
			return []string{"gate", "import", "--db", filepath.Join(dir, "l.db"), "--manifest", filepath.Join(dir, "missing")}
		}, "no such file"},
	} {
		t.Run(tc.name+" without one exits non-zero naming the flag", func(t *testing.T) {
			e := productionEnv(t)
			e["ENCORE_GATE_VERIFY_KEY"] = ""
			setEnv(t, e)
			code, _, errOut := run(t, newRootCmd(), tc.args(t.TempDir())...)
			require.Equal(t, 1, code, errOut)
			require.Contains(t, errOut, "--verify-key")
			require.Contains(t, errOut, "ENCORE_GATE_VERIFY_KEY")
			require.NotContains(t, errOut, tc.rests)
		})
		t.Run(tc.name+" with --verify-key runs", func(t *testing.T) {
			e := productionEnv(t)
			key := e["ENCORE_GATE_VERIFY_KEY"]
			e["ENCORE_GATE_VERIFY_KEY"] = ""
			setEnv(t, e)
			code, _, errOut := run(t, newRootCmd(), append(tc.args(t.TempDir()), "--verify-key", key)...)
			require.Equal(t, 1, code, errOut)
			require.Contains(t, errOut, tc.rests)
		})
		t.Run(tc.name+" with ENCORE_GATE_VERIFY_KEY runs", func(t *testing.T) {
			setEnv(t, productionEnv(t))
			code, _, errOut := run(t, newRootCmd(), tc.args(t.TempDir())...)
			require.Equal(t, 1, code, errOut)
			require.Contains(t, errOut, tc.rests)
		})
	}
}

func TestKeysGeneratePrintsAFreshUsableSetAndTheGateVerifyKey(t *testing.T) {
	t.Parallel()
	first, second := generated(t), generated(t)
	code, out, _ := run(t, newRootCmd(), "keys", "generate")
	require.Equal(t, 0, code)
	for _, s := range config.DevSecrets() {
		if s.Provider {
			require.NotContains(t, first, s.Env, "a provider's key cannot be generated")
			require.Contains(t, out, "# "+s.Env+": cannot be generated; take it from the payment provider's dashboard")
			continue
		}
		value := first[s.Env]
		if s.Keyring {
			_, key, ok := strings.Cut(value, ":")
			require.True(t, ok, "%s is one id:key pair", s.Env)
			value = key
		}
		require.Len(t, value, 64, "%s is 32 random bytes in hex", s.Env)
		require.NotEqual(t, s.Default, first[s.Env])
		require.NotEqual(t, first[s.Env], second[s.Env], "%s is fresh each time", s.Env)
	}
	for _, env := range config.PasswordSecrets() {
		require.Len(t, first[env], 64, env)
	}
	require.Equal(t, config.Production, first["ENCORE_ENV"])

	cfg, err := config.LoadFrom(func(k string) (string, bool) { v, ok := first[k]; return v, ok })
	require.NoError(t, err, "every line is a valid variable")
	keys, err := manifest.KeysFromConfig(cfg)
	require.NoError(t, err, "the manifest key and signing seed parse")
	_, err = system.TicketKeyring(cfg)
	require.NoError(t, err, "the ticket sealing key parses")
	seed, err := hex.DecodeString(first["ENCORE_MANIFEST_SIGNING_SEED"])
	require.NoError(t, err)
	pub := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
	require.Equal(t, hex.EncodeToString(pub), first["ENCORE_GATE_VERIFY_KEY"])
	require.True(t, bytes.Equal(keys.Verify, pub), "the gate verifies what the exporter signs")
}

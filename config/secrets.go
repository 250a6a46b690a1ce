package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// The values of ENCORE_ENV.
const (
	// Production refuses unsafe secrets; it is the default so that a bare
	// encore api can never run on the public development defaults.
	Production = "production"
	// Staging refuses unsafe secrets and the demo login like production;
	// only a checkout's return_url may still point at loopback.
	Staging = "staging"
	// Development accepts the development defaults (encore dev sets it).
	Development = "development"
)

// MinSecretBytes is the shortest secret production accepts: 256 bits of a
// random hex or base64 string, and far shorter than any real provider key.
const MinSecretBytes = 32

// defaultUse is who needs a development-default secret whose field has no use
// tag: the two production processes, so a new secret is guarded before anyone
// remembers to say where it is used.
var defaultUse = []string{"api", "worker"}

// DevSecret is a Secret field with a development default. Such a default is
// published (in the source and README), so production must override it.
type DevSecret struct {
	Env     string
	Default string
	// Use lists the commands that refuse to start on the default (the field's
	// use tag; api and worker when it has none).
	Use []string
	// Provider is true when the value is issued by a third party (generate:
	// "provider") and so cannot be generated here.
	Provider bool
	// Keyring is true for a list of id:key pairs (generate:"keyring"), so a
	// generated value is one key under a fresh ID.
	Keyring bool
}

// DevSecrets lists every Secret field whose default is not empty, in field
// order. The rule needs no list to maintain: adding such a field guards it.
func DevSecrets() []DevSecret {
	var out []DevSecret
	t := reflect.TypeOf(Config{})
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Type != reflect.TypeOf(Secret("")) || f.Tag.Get("default") == "" {
			continue
		}
		use := strings.Fields(f.Tag.Get("use"))
		if len(use) == 0 {
			use = defaultUse
		}
		out = append(out, DevSecret{Env: f.Tag.Get("env"), Default: f.Tag.Get("default"), Use: use,
			Provider: f.Tag.Get("generate") == "provider", Keyring: f.Tag.Get("generate") == "keyring"})
	}
	return out
}

// Development reports whether ENCORE_ENV allows the development defaults.
func (c Config) Development() bool { return c.Env == Development }

// CheckSecrets refuses to let command (api, worker, gate, manifest) run in
// production on a secret it uses that is empty, shorter than MinSecretBytes
// or its published development default. The error names every offending
// variable at once, so one edit of the env file fixes them all; it never
// prints a value.
func (c Config) CheckSecrets(command string) error {
	if c.Development() {
		return nil
	}
	v := reflect.ValueOf(c)
	var bad []string
	for _, s := range DevSecrets() {
		if !slices.Contains(s.Use, command) {
			continue
		}
		val := secretByEnv(v, s.Env)
		switch {
		case val == "":
			bad = append(bad, s.Env+" is empty")
		case val == s.Default:
			bad = append(bad, s.Env+" is the development default")
		case len(val) < MinSecretBytes:
			bad = append(bad, fmt.Sprintf("%s is shorter than %d bytes", s.Env, MinSecretBytes))
		case s.Keyring && KeyringHoldsDefault(val, s.Default):
			// A new key put first still leaves the published one able to
			// decrypt, and anyone holding it could forge what it encrypts.
			bad = append(bad, s.Env+" still holds the development default key")
		}
	}
	// The demo login hands any caller any role (admin included): only a
	// development machine may offer it.
	if command == "api" && c.DemoLogin && c.OIDCIssuer == "" {
		bad = append(bad, "ENCORE_DEMO_LOGIN is true (anyone could mint an admin token; set ENCORE_OIDC_ISSUER, "+
			"or ENCORE_ENV=development on a development machine)")
	}
	if command == "api" && c.LiveStripe() {
		bad = append(bad, c.stripeKeyProblems()...)
	}
	if command == "api" || command == "worker" {
		if tok := c.TemporalCodecToken.Reveal(); tok != "" && len(tok) < MinSecretBytes {
			bad = append(bad, fmt.Sprintf("ENCORE_TEMPORAL_CODEC_TOKEN is shorter than %d bytes", MinSecretBytes))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("encore %s refuses to run with ENCORE_ENV=%s: %s. Run encore keys generate for fresh values "+
		"(payment provider keys come from its dashboard), or set ENCORE_ENV=development on a development machine",
		command, c.Env, strings.Join(bad, "; "))
}

// KeyringHoldsDefault reports whether a keyring (comma-separated id:key)
// holds the key material of the default keyring under any ID.
func KeyringHoldsDefault(keyring, def string) bool {
	defaults := map[string]bool{}
	for _, e := range strings.Split(def, ",") {
		if _, key, ok := strings.Cut(strings.TrimSpace(e), ":"); ok {
			defaults[strings.ToLower(strings.TrimSpace(key))] = true
		}
	}
	for _, e := range strings.Split(keyring, ",") {
		if _, key, ok := strings.Cut(strings.TrimSpace(e), ":"); ok && defaults[strings.ToLower(strings.TrimSpace(key))] {
			return true
		}
	}
	return false
}

// DevCodecKeys is the development default of ENCORE_TEMPORAL_CODEC_KEYS.
func DevCodecKeys() string {
	f, _ := reflect.TypeOf(Config{}).FieldByName("TemporalCodecKeys")
	return f.Tag.Get("default")
}

func secretByEnv(v reflect.Value, env string) string {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		if t.Field(i).Tag.Get("env") == env {
			return v.Field(i).Interface().(Secret).Reveal()
		}
	}
	return ""
}

// PasswordSecrets lists the variables of Secret fields tagged
// generate:"password": values with no default that encore keys generate makes
// for a setup step (the database logins), in field order.
func PasswordSecrets() []string {
	var out []string
	t := reflect.TypeOf(Config{})
	for i := 0; i < t.NumField(); i++ {
		if f := t.Field(i); f.Tag.Get("generate") == "password" {
			out = append(out, f.Tag.Get("env"))
		}
	}
	return out
}

// stripeMode is a Stripe key's mode, "live" or "test", read from its prefix
// (sk_, rk_ and pk_ keys alike), or "" for a key that is not Stripe's.
func stripeMode(key string) string {
	for _, p := range []string{"sk_", "rk_", "pk_"} {
		if rest, ok := strings.CutPrefix(key, p); ok {
			if mode, _, ok := strings.Cut(rest, "_"); ok && (mode == "live" || mode == "test") {
				return mode
			}
		}
	}
	return ""
}

// stripeKeyProblems is what is wrong with the publishable key beside the
// secret key: a browser given a key of another mode than the server's
// creates payment methods the server's intents cannot use, and the
// sandbox's publishable key only works against the sandbox.
func (c Config) stripeKeyProblems() []string {
	pk := c.StripePublishableKey
	switch {
	case pk == "":
		return []string{"ENCORE_STRIPE_PUBLISHABLE_KEY is empty"}
	case pk == SandboxPublishableKey:
		return []string{"ENCORE_STRIPE_PUBLISHABLE_KEY is the payment sandbox's"}
	case !strings.HasPrefix(pk, "pk_") || stripeMode(pk) == "":
		return []string{"ENCORE_STRIPE_PUBLISHABLE_KEY is not a publishable key (pk_live_ or pk_test_)"}
	}
	if sm := stripeMode(c.StripeKey.Reveal()); sm != "" && sm != stripeMode(pk) {
		return []string{fmt.Sprintf("ENCORE_STRIPE_PUBLISHABLE_KEY is a %s key but ENCORE_STRIPE_KEY a %s key", stripeMode(pk), sm)}
	}
	return nil
}

// SandboxPublishableKey is the payment sandbox's publishable key, the
// default of ENCORE_STRIPE_PUBLISHABLE_KEY.
const SandboxPublishableKey = "pk_test_encore_sandbox"

// LiveStripe reports whether the secret key is one of a real Stripe
// account (live or test mode), not the sandbox's.
func (c Config) LiveStripe() bool {
	k := c.StripeKey.Reveal()
	return stripeMode(k) != "" && !strings.HasPrefix(k, "sk_test_encore")
}

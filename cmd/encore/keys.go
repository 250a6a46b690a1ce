package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"time"

	"github.com/encore-tickets/encore/config"
)

// signingSeedEnv is the secret the gate's verify key derives from.
const signingSeedEnv = "ENCORE_MANIFEST_SIGNING_SEED"

// runKeysGenerate prints a fresh value for every secret with a development
// default, as an env file: 32 random bytes in hex suit every one of them (the
// AES-256 keys and the Ed25519 seed parse hex; the HMAC and pass seeds take
// any string). Provider-issued values get a comment instead, and the gate's
// verify key is derived from the new signing seed.
func runKeysGenerate(w io.Writer) error {
	fmt.Fprintf(w, "# Encore production secrets, generated %s by encore keys generate.\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintln(w, "# Keep this file out of version control; give each process only what it uses.")
	fmt.Fprintln(w, "ENCORE_ENV="+config.Production)
	var seed []byte
	for _, s := range config.DevSecrets() {
		if s.Provider {
			fmt.Fprintf(w, "# %s: cannot be generated; take it from the payment provider's dashboard.\n", s.Env)
			continue
		}
		b, err := random32()
		if err != nil {
			return err
		}
		if s.Env == signingSeedEnv {
			seed = b
		}
		if s.Keyring {
			// The key ID names the generation, so a rotation later reads as one.
			fmt.Fprintf(w, "%s=k%s:%s\n", s.Env, time.Now().UTC().Format("20060102"), hex.EncodeToString(b))
			continue
		}
		fmt.Fprintf(w, "%s=%s\n", s.Env, hex.EncodeToString(b))
	}
	if seed != nil {
		pub := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
		fmt.Fprintln(w, "# The gate verifies manifests with the public key of "+signingSeedEnv+" (not a secret):")
		fmt.Fprintf(w, "ENCORE_GATE_VERIFY_KEY=%s\n", hex.EncodeToString(pub))
	}
	fmt.Fprintln(w, "# Database login passwords: for encore db logins only; each process gets its own login in its database URL.")
	for _, env := range config.PasswordSecrets() {
		b, err := random32()
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s=%s\n", env, hex.EncodeToString(b))
	}
	return nil
}

func random32() ([]byte, error) {
	b := make([]byte, 32)
	_, err := rand.Read(b)
	return b, err
}

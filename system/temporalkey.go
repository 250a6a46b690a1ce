package system

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/temporalclient"
)

// TemporalKeyFile is where, under ENCORE_DATA_DIR, encore dev and encore
// temporal keep the embedded Temporal server's API key when
// ENCORE_TEMPORAL_API_KEY is not set: the bearer every Encore process
// sends it, the only credential with full access (the Web UI's users get
// theirs by signing in). Readable by this user only.
const TemporalKeyFile = "temporal.key"

// EmbeddedTemporalKey is the API key of the Temporal server this process
// embeds: ENCORE_TEMPORAL_API_KEY, else the one in the data folder, made
// there on first use, so encore api and encore worker processes sharing the
// folder (and restarts) find the same one.
func EmbeddedTemporalKey(cfg config.Config) (config.Secret, error) {
	if cfg.TemporalAPIKey != "" {
		return cfg.TemporalAPIKey, nil
	}
	if key, err := readTemporalKey(cfg); err != nil || key != "" {
		return key, err
	}
	key := rand.Text() + rand.Text()
	path := DataPath(cfg, TemporalKeyFile)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) { // another process made it meanwhile
		return readTemporalKey(cfg)
	}
	if err != nil {
		return "", fmt.Errorf("the Temporal API key: %w", err)
	}
	if _, err := f.WriteString(key + "\n"); err != nil {
		_ = f.Close()
		return "", fmt.Errorf("the Temporal API key: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("the Temporal API key: %w", err)
	}
	return config.Secret(key), nil
}

// readTemporalKey is the data folder's key, or "" when there is none.
func readTemporalKey(cfg config.Config) (config.Secret, error) {
	b, err := os.ReadFile(filepath.Join(cfg.DataDir, TemporalKeyFile))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("the Temporal API key: %w", err)
	}
	return config.Secret(strings.TrimSpace(string(b))), nil
}

// withTemporalKey fills in ENCORE_TEMPORAL_API_KEY, when it is not set and
// the Temporal server is on this machine, from the data folder's key file
// that encore dev or encore temporal made: encore api, worker and gate
// against an encore temporal of the same folder need no setting.
func withTemporalKey(cfg config.Config, temporalAddr string) (config.Config, error) {
	if cfg.TemporalAPIKey != "" || !temporalclient.Loopback(temporalAddr) {
		return cfg, nil
	}
	key, err := readTemporalKey(cfg)
	if err != nil {
		return cfg, err
	}
	cfg.TemporalAPIKey = key
	return cfg, nil
}

package config_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
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
	_, file, _, _ := runtime.Caller(0)
	readme, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "README.md"))
	require.NoError(t, err)
	require.Contains(t, string(readme), strings.TrimSpace(config.Table()), "regenerate the table with: go run ./cmd/encore config")
}

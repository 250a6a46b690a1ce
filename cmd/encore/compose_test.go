package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/encore-tickets/encore/config"
)

// TestComposeFileDescribesTheProductionTopology checks the structure of
// docker-compose.temporal.yml, since no Docker engine runs here: the Temporal
// cluster on PostgreSQL with its UI, PostgreSQL, Redis, and encore api and
// encore worker built from this repository with the infrastructure they need.
func TestComposeFileDescribesTheProductionTopology(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "docker-compose.temporal.yml"))
	require.NoError(t, err)
	var f struct {
		Services map[string]struct {
			Image       string            `yaml:"image"`
			Build       any               `yaml:"build"`
			Command     []string          `yaml:"command"`
			DependsOn   any               `yaml:"depends_on"`
			Environment map[string]string `yaml:"environment"`
			Ports       []string          `yaml:"ports"`
		} `yaml:"services"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &f))
	for _, name := range []string{"postgresql", "redis", "temporal", "temporal-ui", "encore-api", "encore-worker"} {
		require.Contains(t, f.Services, name)
	}
	require.Equal(t, "postgres12", f.Services["temporal"].Environment["DB"], "Temporal persists to PostgreSQL")
	require.Equal(t, "postgresql", f.Services["temporal"].Environment["POSTGRES_SEEDS"])
	require.Equal(t, "temporal:7233", f.Services["temporal-ui"].Environment["TEMPORAL_ADDRESS"])

	known := map[string]bool{}
	for _, fld := range reflect.VisibleFields(reflect.TypeOf(config.Config{})) {
		known[fld.Tag.Get("env")] = true
	}
	for name, cmd := range map[string]string{"encore-api": "api", "encore-worker": "worker"} {
		svc := f.Services[name]
		require.Equal(t, ".", svc.Build, "%s is built from this repository", name)
		require.Equal(t, []string{cmd}, svc.Command)
		for _, v := range []string{"ENCORE_DATABASE_URL", "ENCORE_REDIS_URL", "ENCORE_TEMPORAL_ADDRESS"} {
			require.NotEmpty(t, svc.Environment[v], "%s sets %s", name, v)
		}
		for v := range svc.Environment {
			require.True(t, known[v], "%s sets %s, which config does not read", name, v)
		}
		require.Contains(t, svc.Environment["ENCORE_TEMPORAL_ADDRESS"], "temporal:")
	}
	for name, svc := range f.Services {
		for _, p := range svc.Ports {
			require.True(t, strings.HasPrefix(p, "127.0.0.1:"), "%s publishes %s beyond loopback", name, p)
		}
	}
	_, err = os.Stat(filepath.Join("..", "..", "Dockerfile"))
	require.NoError(t, err, "the encore services build from the Dockerfile")
}

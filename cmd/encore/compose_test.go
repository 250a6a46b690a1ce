package main

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/encore-tickets/encore/config"
)

type composeService struct {
	Image       string   `yaml:"image"`
	Restart     string   `yaml:"restart"`
	Profiles    []string `yaml:"profiles"`
	Healthcheck *struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
	Volumes     []string          `yaml:"volumes"`
	Build       any               `yaml:"build"`
	Command     []string          `yaml:"command"`
	DependsOn   any               `yaml:"depends_on"`
	Environment map[string]string `yaml:"environment"`
	Ports       []string          `yaml:"ports"`
}

func readCompose(t *testing.T) map[string]composeService {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "docker-compose.temporal.yml"))
	require.NoError(t, err)
	var f struct {
		Services map[string]composeService `yaml:"services"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &f))
	return f.Services
}

// TestComposeFileDescribesTheProductionTopology checks the structure of
// docker-compose.temporal.yml, since no Docker engine runs here: the Temporal
// cluster on PostgreSQL with its UI, PostgreSQL, Redis, and encore api and
// encore worker built from this repository with the infrastructure they need.
func TestComposeFileDescribesTheProductionTopology(t *testing.T) {
	t.Parallel()
	f := struct{ Services map[string]composeService }{readCompose(t)}
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
	_, err := os.Stat(filepath.Join("..", "..", "Dockerfile"))
	require.NoError(t, err, "the encore services build from the Dockerfile")
}

// loginOf is the user a postgres:// URL connects as.
var loginOf = regexp.MustCompile(`^postgres(?:ql)?://([^:@/]+)[:@]`)

// TestComposeServicesConnectWithLeastPrivilege checks that Encore's
// processes never connect as the PostgreSQL superuser (only the one-shot
// encore-logins and Temporal do), that migrations run as the schema's owner,
// and that api and worker run in production with every secret they check
// taken from the environment file rather than written here.
func TestComposeServicesConnectWithLeastPrivilege(t *testing.T) {
	t.Parallel()
	services := readCompose(t)
	superuser := services["postgresql"].Environment["POSTGRES_USER"]
	require.NotEmpty(t, superuser)
	want := map[string]map[string]string{
		"encore-logins":  {"ENCORE_DATABASE_URL": superuser},
		"encore-migrate": {"ENCORE_DATABASE_URL": "encore_migrator"},
		"encore-api":     {"ENCORE_DATABASE_URL": "encore_app", "ENCORE_READER_DATABASE_URL": "encore_reader"},
		"encore-worker":  {"ENCORE_DATABASE_URL": "encore_app", "ENCORE_READER_DATABASE_URL": "encore_reader"},
	}
	require.Equal(t, []string{"db", "logins"}, services["encore-logins"].Command)
	require.Equal(t, []string{"migrate"}, services["encore-migrate"].Command)
	for name, svc := range services {
		for v, val := range svc.Environment {
			m := loginOf.FindStringSubmatch(val)
			if m == nil {
				continue
			}
			if login, ok := want[name][v]; ok {
				require.Equal(t, login, m[1], "%s %s", name, v)
			}
			if name != "encore-logins" {
				require.NotEqual(t, superuser, m[1], "%s connects as the superuser in %s", name, v)
			}
		}
		for v, login := range want[name] {
			require.Contains(t, svc.Environment, v, "%s sets %s (as %s)", name, v, login)
		}
	}
	for _, name := range []string{"encore-api", "encore-worker"} {
		env := services[name].Environment
		require.Equal(t, "${ENCORE_ENV:-"+config.Production+"}", env["ENCORE_ENV"], name)
		require.Equal(t, "${ENCORE_DEMO_LOGIN:-false}", env["ENCORE_DEMO_LOGIN"], "%s: no demo login unless the env file asks", name)
		require.Equal(t, "${ENCORE_ADMIN_ADDR:-127.0.0.1:9090}", env["ENCORE_ADMIN_ADDR"],
			"%s: the admin listener (the payload codec on it) binds loopback unless the env file asks", name)
		cmd := strings.TrimPrefix(name, "encore-")
		for _, s := range config.DevSecrets() {
			if !slices.Contains(s.Use, cmd) {
				continue
			}
			require.True(t, strings.HasPrefix(env[s.Env], "${"+s.Env+":?"), "%s takes %s from the environment file, required", name, s.Env)
		}
	}
}

// TestTheImageRunsAsANonRootUser reads the Dockerfile's final stage: its
// last USER must be a numeric uid other than 0, so the platform can verify
// it without the image's /etc/passwd.
func TestTheImageRunsAsANonRootUser(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("..", "..", "Dockerfile"))
	require.NoError(t, err)
	user := ""
	for _, line := range strings.Split(string(raw), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		switch strings.ToUpper(fields[0]) {
		case "FROM":
			user = "" // a new stage starts as root again
		case "USER":
			user = fields[1]
		}
	}
	require.NotEmpty(t, user, "the final stage sets USER")
	uid, gid, _ := strings.Cut(user, ":")
	n, err := strconv.Atoi(uid)
	require.NoError(t, err, "USER %s is a numeric uid", user)
	require.NotZero(t, n, "USER is not root")
	if gid != "" {
		g, err := strconv.Atoi(gid)
		require.NoError(t, err, "USER %s has a numeric gid", user)
		require.NotZero(t, g, "the group is not root")
	}
}

// TestEveryComposeServiceIsReadyBeforeItsDependentsAndRestarts checks the
// start order an operator relies on: Temporal's schema job, then the server,
// then its namespace job; the logins and migration jobs; then api and worker,
// each with a health check and a restart policy, as are the stores, the
// sandbox, Prometheus and Grafana, whose mounted files exist.
func TestEveryComposeServiceIsReadyBeforeItsDependentsAndRestarts(t *testing.T) {
	t.Parallel()
	services := readCompose(t)
	oneShot := map[string]bool{"temporal-schema": true, "temporal-namespace": true, "encore-logins": true, "encore-migrate": true}
	for _, name := range []string{"postgresql", "redis", "temporal-schema", "temporal", "temporal-namespace", "temporal-ui",
		"encore-logins", "encore-migrate", "encore-api", "encore-worker", "payment-sandbox", "prometheus", "grafana"} {
		svc, ok := services[name]
		require.True(t, ok, "compose has %s", name)
		if oneShot[name] {
			require.Empty(t, svc.Restart, "%s is a job: it runs once", name)
			continue
		}
		require.Equal(t, "unless-stopped", svc.Restart, "%s restarts", name)
		if name != "temporal-ui" && name != "grafana" {
			require.NotNil(t, svc.Healthcheck, "%s has a health check", name)
		}
		for _, v := range svc.Volumes {
			host, _, _ := strings.Cut(v, ":")
			if strings.HasPrefix(host, "./") {
				_, err := os.Stat(filepath.Join("..", "..", host))
				require.NoError(t, err, "%s mounts %s", name, host)
			}
		}
	}
	deps := func(name string) map[string]string {
		out := map[string]string{}
		m, ok := services[name].DependsOn.(map[string]any)
		require.True(t, ok, "%s names the condition of each dependency", name)
		for dep, v := range m {
			out[dep] = v.(map[string]any)["condition"].(string)
		}
		return out
	}
	require.Equal(t, "service_healthy", deps("temporal-schema")["postgresql"])
	require.Equal(t, "service_completed_successfully", deps("temporal")["temporal-schema"])
	require.Equal(t, "service_healthy", deps("temporal-namespace")["temporal"])
	for _, name := range []string{"encore-api", "encore-worker"} {
		d := deps(name)
		require.Equal(t, "service_completed_successfully", d["encore-migrate"], name)
		require.Equal(t, "service_completed_successfully", d["temporal-namespace"], name)
		require.Equal(t, "service_healthy", d["redis"], name)
		require.Equal(t, "encore", services[name].Healthcheck.Test[1], "%s checks itself with encore probe", name)
	}
	require.Equal(t, []string{"staging"}, services["payment-sandbox"].Profiles, "the sandbox runs in staging only")
	prom, err := os.ReadFile(filepath.Join("..", "..", "deploy", "prometheus", "prometheus.yml"))
	require.NoError(t, err)
	for _, target := range []string{"encore-api:9090", "encore-worker:9090"} {
		require.Contains(t, string(prom), target, "Prometheus scrapes the admin listener")
	}
}

// TestEveryEncoreServiceSetsOnlyVariablesTheConfigReads checks every Encore
// process in the compose file (jobs and the sandbox too), so a typo in a
// variable name cannot silently leave a default in force.
func TestEveryEncoreServiceSetsOnlyVariablesTheConfigReads(t *testing.T) {
	t.Parallel()
	known := map[string]bool{}
	for _, fld := range reflect.VisibleFields(reflect.TypeOf(config.Config{})) {
		known[fld.Tag.Get("env")] = true
	}
	n := 0
	for name, svc := range readCompose(t) {
		if svc.Build != "." {
			continue
		}
		n++
		for v := range svc.Environment {
			require.True(t, known[v], "%s sets %s, which config does not read", name, v)
		}
	}
	require.GreaterOrEqual(t, n, 5, "logins, migrate, api, worker and the sandbox are built from here")
}

// TestTheSourceReadsTheEnvironmentOnlyThroughConfig: a variable read
// anywhere else would have no default, no documentation and no check. The
// test harness's own variables (ENCORE_TEST_*) are the one exception.
func TestTheSourceReadsTheEnvironmentOnlyThroughConfig(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	read := regexp.MustCompile(`os\.(?:Getenv|LookupEnv)\("(ENCORE_[A-Z0-9_]+)"\)`)
	known := map[string]bool{}
	for _, fld := range reflect.VisibleFields(reflect.TypeOf(config.Config{})) {
		known[fld.Tag.Get("env")] = true
	}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != root) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range read.FindAllStringSubmatch(string(src), -1) {
			if strings.HasPrefix(m[1], "ENCORE_TEST_") {
				continue // the test servers' URLs, set by encore testinfra for go test only
			}
			require.True(t, known[m[1]], "%s reads %s outside the configuration struct", path, m[1])
		}
		return nil
	})
	require.NoError(t, err)
}

// TestTheComposeEnvironmentPassesTheProductionStartUpChecks reads the api
// and worker environment as compose would fill it from a generated env file
// (every required ${VAR:?...} set to a fresh value, every ${VAR:-default}
// left at its default) and runs the checks encore api and encore worker make
// before any work: no unsafe secret, nothing half-configured.
func TestTheComposeEnvironmentPassesTheProductionStartUpChecks(t *testing.T) {
	t.Parallel()
	required := regexp.MustCompile(`\$\{([A-Z0-9_]+):\?[^}]*\}`)
	defaulted := regexp.MustCompile(`\$\{[A-Z0-9_]+:-([^}]*)\}`)
	services := readCompose(t)
	for name, command := range map[string]string{"encore-api": "api", "encore-worker": "worker"} {
		env := map[string]string{}
		for k, v := range services[name].Environment {
			v = required.ReplaceAllStringFunc(v, func(m string) string {
				// 64 hex characters: a valid key wherever one is parsed.
				return strings.Repeat("ab", 32)
			})
			env[k] = defaulted.ReplaceAllString(v, "$1")
		}
		cfg, err := config.LoadFrom(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
		require.NoError(t, err, name)
		require.Equal(t, config.Production, cfg.Env, "%s: production unless the env file says otherwise", name)
		require.NoError(t, cfg.CheckSecrets(command), name)
		require.NoError(t, cfg.CheckDeployment(command), name)
	}
}

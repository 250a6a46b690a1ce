package prometheus

import (
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/common/promslog"
	"github.com/prometheus/prometheus/config"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

const (
	dashboardFile  = "../grafana/dashboards/encore-sale.json"
	datasourceFile = "../grafana/provisioning/datasources/prometheus.yml"
	providerFile   = "../grafana/provisioning/dashboards/encore.yml"
	composeFile    = "../../docker-compose.temporal.yml"
)

// The parts of Grafana's dashboard model that the tests read.
type dashboard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name       string      `json:"name"`
			Definition string      `json:"definition"`
			Datasource *datasource `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int         `json:"id"`
	Type       string      `json:"type"`
	Title      string      `json:"title"`
	Datasource *datasource `json:"datasource"`
	GridPos    struct{ H, W, X, Y int }
	Targets    []struct {
		RefID      string      `json:"refId"`
		Expr       string      `json:"expr"`
		Datasource *datasource `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	raw, err := os.ReadFile(dashboardFile)
	require.NoError(t, err)
	var d dashboard
	require.NoError(t, json.Unmarshal(raw, &d))
	require.NotEmpty(t, d.UID, "a fixed uid keeps links to the dashboard stable")
	require.NotEmpty(t, d.Panels)
	return d
}

// allPanels are the dashboard's panels, those in collapsed rows included.
func allPanels(ps []panel) []panel {
	var out []panel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, allPanels(p.Panels)...)
	}
	return out
}

// grafanaVariable is a dashboard variable in a query: $name, ${name}, or one
// of Grafana's own ($__rate_interval).
var grafanaVariable = regexp.MustCompile(`\$(?:\{(\w+)\}|(\w+))`)

// promQL is expr as Prometheus receives it: Grafana's interval variables
// become a duration, the dashboard's own (only ever in a label matcher) a
// regular expression matching everything.
func promQL(t *testing.T, expr string, vars map[string]bool) string {
	t.Helper()
	return grafanaVariable.ReplaceAllStringFunc(expr, func(v string) string {
		m := grafanaVariable.FindStringSubmatch(v)
		name := m[1] + m[2]
		if strings.HasPrefix(name, "__") {
			return "5m"
		}
		require.True(t, vars[name], "%q uses $%s, which the dashboard does not define", expr, name)
		return ".*"
	})
}

func TestEveryDashboardQueryParsesAndNamesOnlyKnownSeries(t *testing.T) {
	d := readDashboard(t)
	known := knownSeries(t)
	vars := map[string]bool{}
	labelValues := regexp.MustCompile(`^label_values\((\w+), *(\w+)\)$`)
	for _, v := range d.Templating.List {
		vars[v.Name] = true
		m := labelValues.FindStringSubmatch(v.Definition)
		require.NotNil(t, m, "variable %s lists a label's values", v.Name)
		require.True(t, known[m[1]], "variable %s reads %s, which no process exports", v.Name, m[1])
	}
	queries := 0
	for _, p := range allPanels(d.Panels) {
		if p.Type == "row" {
			continue
		}
		require.NotEmpty(t, p.Targets, "panel %q queries something", p.Title)
		for _, target := range p.Targets {
			expr, err := promParser.ParseExpr(promQL(t, target.Expr, vars))
			require.NoError(t, err, "panel %q, query %s: %s", p.Title, target.RefID, target.Expr)
			for _, n := range selectedNames(expr) {
				require.True(t, known[n], "panel %q selects %s, which no process exports and no rule records", p.Title, n)
			}
			queries++
		}
	}
	require.Greater(t, queries, 20)
}

func TestEveryDashboardPanelReadsTheProvisionedDataSource(t *testing.T) {
	raw, err := os.ReadFile(datasourceFile)
	require.NoError(t, err)
	var f struct {
		Datasources []struct {
			UID  string `yaml:"uid"`
			Type string `yaml:"type"`
		} `yaml:"datasources"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &f))
	require.Len(t, f.Datasources, 1)
	want := datasource{Type: f.Datasources[0].Type, UID: f.Datasources[0].UID}
	require.NotEmpty(t, want.UID, "the data source has a fixed uid for the dashboards to name")

	d := readDashboard(t)
	for _, v := range d.Templating.List {
		require.Equal(t, &want, v.Datasource, "variable %s", v.Name)
	}
	ids := map[int]bool{}
	for _, p := range allPanels(d.Panels) {
		require.False(t, ids[p.ID], "panel id %d is unique", p.ID)
		ids[p.ID] = true
		require.LessOrEqual(t, p.GridPos.X+p.GridPos.W, 24, "panel %q fits the 24-column grid", p.Title)
		if p.Type == "row" {
			continue
		}
		require.Equal(t, &want, p.Datasource, "panel %q", p.Title)
		for _, target := range p.Targets {
			require.Equal(t, &want, target.Datasource, "panel %q, query %s", p.Title, target.RefID)
		}
	}
}

// TestTheDashboardShowsEverySignalOfTheSale: the series an operator needs
// on the day, each on some panel.
func TestTheDashboardShowsEverySignalOfTheSale(t *testing.T) {
	shown := map[string]bool{}
	for _, p := range allPanels(readDashboard(t).Panels) {
		for _, target := range p.Targets {
			expr, err := promParser.ParseExpr(promQL(t, target.Expr, map[string]bool{"event": true, "route": true}))
			require.NoError(t, err)
			for _, n := range selectedNames(expr) {
				shown[n] = true
			}
		}
	}
	for _, n := range []string{
		"encore_waitingroom_queue_depth", "encore_waitingroom_active_leases", "encore_waitingroom_capacity",
		"event:encore_waitingroom_admitted:rate1m", ":encore_waitingroom_join_to_admit_seconds:p99_5m",
		"result:encore_holds:rate5m", ":encore_hold_duration_seconds:p50_5m", ":encore_hold_duration_seconds:p99_5m",
		":encore_checkout_to_paid_seconds:p99_5m", ":encore_bookings_paid:rate1m",
		"route:encore_http_requests_errors:ratio_rate5m", "route:encore_http_request_duration_seconds:p99_5m",
		"encore_saga_oldest_open_age_seconds", ":encore_webhook_lag_seconds:p99_5m",
		"encore_outbox_oldest_unpublished_age_seconds", "encore_reconcile_mismatches",
		"encore_audit_violations", "encore_audit_paid_without_tickets",
		"encore_booking_watched", "encore_booking_changes_listening",
		"slo:burn_rate:15m", "slo:burn_rate:1h", "slo:burn_rate:6h", "slo:burn_rate:1d",
	} {
		require.True(t, shown[n], "the dashboard shows %s", n)
	}
}

// TestComposeMountsTheRulesAndTheDashboard ties the files together: the
// compose file mounts the rules where prometheus.yml looks for them, and
// the dashboards where the provider loads them.
func TestComposeMountsTheRulesAndTheDashboard(t *testing.T) {
	raw, err := os.ReadFile(composeFile)
	require.NoError(t, err)
	var compose struct {
		Services map[string]struct {
			Volumes []string `yaml:"volumes"`
		} `yaml:"services"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &compose))
	mounts := func(service string) map[string]string { // host path: container path
		out := map[string]string{}
		for _, v := range compose.Services[service].Volumes {
			parts := strings.Split(v, ":")
			require.GreaterOrEqual(t, len(parts), 2, v)
			out[filepath.Clean(parts[0])] = parts[1]
		}
		return out
	}

	prom := mounts("prometheus")
	configAt := prom["deploy/prometheus/prometheus.yml"]
	require.NotEmpty(t, configAt, "Prometheus gets prometheus.yml")
	cfg, err := config.LoadFile("prometheus.yml", false, promslog.NewNopLogger())
	require.NoError(t, err)
	for _, pattern := range cfg.RuleFiles {
		rel, err := filepath.Rel(".", filepath.Dir(pattern))
		require.NoError(t, err)
		require.Equal(t, path.Join(path.Dir(configAt), rel), prom[filepath.Join("deploy/prometheus", rel)],
			"the rules in deploy/prometheus/%s are mounted where prometheus.yml's %s finds them", rel, pattern)
	}

	raw, err = os.ReadFile(providerFile)
	require.NoError(t, err)
	var provider struct {
		Providers []struct {
			Type    string `yaml:"type"`
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &provider))
	require.Len(t, provider.Providers, 1)
	require.Equal(t, "file", provider.Providers[0].Type)
	grafana := mounts("grafana")
	require.Equal(t, "/etc/grafana/provisioning", grafana["deploy/grafana/provisioning"], "Grafana reads the provisioning files")
	require.Equal(t, provider.Providers[0].Options.Path, grafana["deploy/grafana/dashboards"], "the dashboards are mounted where the provider loads them")
}

package prometheus

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/common/promslog"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/rules"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/require"
)

// ruleFiles are the rule files in the order a test evaluates them: the
// alerts read series the recording rules write.
var ruleFiles = []string{"rules/recording.yml", "rules/alerts.yml"}

// promParser parses PromQL as a stock Prometheus does, without experimental
// functions or syntax, so a rule that passes here loads on the Prometheus of
// docker-compose.temporal.yml too.
var promParser = parser.NewParser(parser.Options{})

const (
	// sampleStep is how often the synthetic series have a sample.
	sampleStep = 15 * time.Second
	// evalStep is how often a test evaluates the rules.
	evalStep = time.Minute
)

var epoch = time.Unix(0, 0).UTC()

// parsedRuleGroups are the rule files' groups, parsed and validated by
// rulefmt (names, templates and expressions), which fails the test on any
// error.
func parsedRuleGroups(t *testing.T) []rulefmt.RuleGroup {
	t.Helper()
	var out []rulefmt.RuleGroup
	for _, f := range ruleFiles {
		rgs, errs := rulefmt.ParseFile(f, false, model.LegacyValidation, promParser, promslog.NewNopLogger())
		require.Empty(t, errs, "%s parses", f)
		out = append(out, rgs.Groups...)
	}
	return out
}

func TestPrometheusLoadsEveryRuleFileInTheRulesDirectory(t *testing.T) {
	cfg, err := config.LoadFile("prometheus.yml", false, promslog.NewNopLogger())
	require.NoError(t, err, "Prometheus's own config package accepts prometheus.yml")
	var loaded []string
	for _, pattern := range cfg.RuleFiles {
		m, err := filepath.Glob(pattern)
		require.NoError(t, err)
		loaded = append(loaded, m...)
	}
	onDisk, err := filepath.Glob("rules/*")
	require.NoError(t, err)
	require.ElementsMatch(t, ruleFiles, onDisk, "the tests read every file in rules/")
	require.ElementsMatch(t, ruleFiles, loaded, "prometheus.yml loads every file in rules/")
}

func TestEveryRuleParsesAndNamesOnlyKnownSeries(t *testing.T) {
	known := knownSeries(t)
	names := map[string]bool{}
	for _, g := range parsedRuleGroups(t) {
		for _, r := range g.Rules {
			expr, err := promParser.ParseExpr(r.Expr)
			require.NoError(t, err, "%s%s", r.Record, r.Alert)
			for _, n := range selectedNames(expr) {
				require.True(t, known[n], "%s%s selects %s, which no process exports and no rule records", r.Record, r.Alert, n)
			}
			if r.Record != "" {
				require.Len(t, strings.Split(r.Record, ":"), 3, "%s is named level:metric:operation", r.Record)
				continue
			}
			require.False(t, names[r.Alert], "%s is defined once", r.Alert)
			names[r.Alert] = true
			require.Regexp(t, `^Encore[A-Z][A-Za-z]+$`, r.Alert)
			require.Contains(t, []string{"page", "ticket"}, r.Labels["severity"], "%s has a severity of page or ticket", r.Alert)
			require.NotEmpty(t, r.Annotations["summary"], "%s has a summary", r.Alert)
			require.NotEmpty(t, r.Annotations["description"], "%s has a description", r.Alert)
		}
	}
	require.NotEmpty(t, names)
}

// env is a TSDB loaded with synthetic series and a PromQL engine over it,
// wired to the rule manager as a Prometheus server wires them.
type env struct {
	opts *rules.ManagerOptions
}

// longAppendWindow lets the rules write samples a day or more behind the
// newest loaded sample (the test storage's default is 12 hours).
func longAppendWindow(o *tsdb.Options) {
	week := int64(7 * 24 * time.Hour / time.Millisecond)
	o.MinBlockDuration, o.MaxBlockDuration = week, week
}

func newEnv(t *testing.T, script string) *env {
	t.Helper()
	st := promqltest.LoadedStorage(t, script, longAppendWindow)
	engine := promqltest.NewTestEngineWithOpts(t, promql.EngineOpts{
		MaxSamples: 50_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute,
		EnableAtModifier: true, EnableNegativeOffset: true, Parser: promParser,
	})
	return &env{opts: &rules.ManagerOptions{
		QueryFunc:    rules.EngineQueryFunc(engine, st),
		AppendableV2: st,
		Queryable:    st,
		Context:      context.Background(),
		NotifyFunc:   func(context.Context, string, ...*rules.Alert) {},
		Logger:       promslog.NewNopLogger(),
		Parser:       promParser,
	}}
}

// rules are fresh copies of every rule, loaded by the rule manager, in file
// and group order.
func (e *env) rules(t *testing.T) []rules.Rule {
	t.Helper()
	m := rules.NewManager(e.opts)
	groups, errs := m.LoadGroups(evalStep, labels.EmptyLabels(), "", nil, false, ruleFiles...)
	require.Empty(t, errs)
	var out []rules.Rule
	for _, f := range ruleFiles {
		rgs, errs := rulefmt.ParseFile(f, false, model.LegacyValidation, promParser, promslog.NewNopLogger())
		require.Empty(t, errs)
		for _, g := range rgs.Groups {
			out = append(out, groups[rules.GroupKey(f, g.Name)].Rules()...)
		}
	}
	return out
}

// ruleID names a rule with its own labels: several recording rules share a
// name and differ by label (slo).
func ruleID(r rules.Rule) string {
	if _, ok := r.(*rules.RecordingRule); ok && r.Labels().Len() > 0 {
		return r.Name() + r.Labels().String()
	}
	return r.Name()
}

// withDependencies is the rule and every recording rule it reads, directly
// or through another, in evaluation order.
func withDependencies(all []rules.Rule, rule rules.Rule) []rules.Rule {
	need := map[string]bool{}
	var visit func(r rules.Rule)
	visit = func(r rules.Rule) {
		for _, n := range selectedNames(r.Query()) {
			if need[n] {
				continue
			}
			need[n] = true
			for _, dep := range all {
				if _, ok := dep.(*rules.RecordingRule); ok && dep.Name() == n {
					visit(dep)
				}
			}
		}
	}
	visit(rule)
	var out []rules.Rule
	for _, r := range all {
		if _, ok := r.(*rules.RecordingRule); ok && need[r.Name()] {
			out = append(out, r)
		}
	}
	return append(out, rule)
}

// recordingCase is a recording rule's expected output after span of
// synthetic series: value by output labels (those the rule's own labels
// and the metric name aside), every output listed.
type recordingCase struct {
	rule   string // the rule's ruleID
	name   string
	span   time.Duration
	series func(g gen) []string
	want   map[string]float64
}

func TestEveryRecordingRuleComputesTheExpectedValue(t *testing.T) {
	cases := append(recordingCases(), burnRateCases(t)...)
	covered := map[string]bool{}
	for _, c := range cases {
		covered[c.rule] = true
	}
	all := newEnv(t, "load 1m\n  up 1\n").rules(t)
	for _, r := range all {
		if _, ok := r.(*rules.RecordingRule); ok {
			require.True(t, covered[ruleID(r)], "%s has a test case", ruleID(r))
		}
	}
	for _, c := range cases {
		t.Run(c.rule+"/"+c.name, func(t *testing.T) {
			t.Parallel()
			g := newGen(sampleStep, c.span)
			e := newEnv(t, g.load(c.series(g)...))
			var rule *rules.RecordingRule
			for _, r := range e.rules(t) {
				if ruleID(r) == c.rule {
					rule = r.(*rules.RecordingRule)
				}
			}
			require.NotNil(t, rule, "%s is in the rule files", c.rule)
			vec, err := rule.Eval(context.Background(), 0, epoch.Add(c.span), e.opts.QueryFunc, nil, 0)
			require.NoError(t, err)
			got := map[string]float64{}
			for _, s := range vec {
				require.Equal(t, rule.Name(), s.Metric.Get(labels.MetricName))
				b := labels.NewBuilder(s.Metric).Del(labels.MetricName)
				rule.Labels().Range(func(l labels.Label) {
					require.Equal(t, l.Value, s.Metric.Get(l.Name), "the rule sets its label %s", l.Name)
					b.Del(l.Name)
				})
				got[b.Labels().String()] = s.F
			}
			require.ElementsMatch(t, keys(c.want), keys(got), "the rule's output series")
			for k, v := range c.want {
				require.InDelta(t, v, got[k], 1e-9*max(1, v), "%s%s", c.rule, k)
			}
		})
	}
}

func keys(m map[string]float64) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// alertCase is a scenario for one alert: synthetic series over span, the
// rules evaluated every evalStep as Prometheus would.
type alertCase struct {
	alert  string
	name   string
	span   time.Duration
	step   time.Duration // between samples; sampleStep if zero
	series func(g gen) []string
	want   outcome
	// labels the firing alert carries (besides alertname and severity).
	labels map[string]string
}

type outcome int

const (
	// fires: firing at the end of the scenario, not before its for.
	fires outcome = iota + 1
	// quiet: never firing, at any evaluation.
	quiet
	// resolves: fired during the scenario, no longer at its end.
	resolves
)

func TestEveryAlertHasAFiringAndAQuietCase(t *testing.T) {
	has := map[string]map[outcome]bool{}
	for _, c := range alertCases() {
		if has[c.alert] == nil {
			has[c.alert] = map[outcome]bool{}
		}
		has[c.alert][c.want] = true
	}
	defined := map[string]bool{}
	for _, g := range parsedRuleGroups(t) {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			defined[r.Alert] = true
			require.True(t, has[r.Alert][fires], "%s has a case where it fires", r.Alert)
			require.True(t, has[r.Alert][quiet], "%s has a case where it stays quiet", r.Alert)
		}
	}
	for a := range has {
		require.True(t, defined[a], "the cases test %s, which the rule files do not define", a)
	}
}

func TestEveryAlertFiresOnItsBadSeriesAndStaysQuietOnHealthyOnes(t *testing.T) {
	for _, c := range alertCases() {
		t.Run(c.alert+"/"+c.name, func(t *testing.T) {
			t.Parallel()
			step := c.step
			if step == 0 {
				step = sampleStep
			}
			g := newGen(step, c.span)
			e := newEnv(t, g.load(c.series(g)...))
			all := e.rules(t)
			var alert *rules.AlertingRule
			for _, r := range all {
				if a, ok := r.(*rules.AlertingRule); ok && a.Name() == c.alert {
					alert = a
				}
			}
			require.NotNil(t, alert, "%s is in the rule files", c.alert)
			alert.SetRestored(true)
			evaluated := withDependencies(all, alert)
			group := rules.NewGroup(rules.GroupOptions{Name: c.alert, File: "test", Interval: evalStep, Rules: evaluated, Opts: e.opts})

			var firstActive, firstFiring time.Duration = -1, -1
			var firing []*rules.Alert
			for at := time.Duration(0); at <= c.span; at += evalStep {
				group.Eval(context.Background(), epoch.Add(at))
				for _, r := range evaluated {
					require.NoError(t, r.LastError(), "%s at %s", ruleID(r), at)
				}
				firing = firing[:0]
				for _, a := range alert.ActiveAlerts() {
					if firstActive < 0 {
						firstActive = at
					}
					if a.State == rules.StateFiring {
						firing = append(firing, a)
					}
				}
				if len(firing) > 0 && firstFiring < 0 {
					firstFiring = at
				}
				if c.want == quiet {
					require.Empty(t, firing, "%s fired at %s", c.alert, at)
				}
			}
			switch c.want {
			case fires:
				require.NotEmpty(t, firing, "%s fires by %s", c.alert, c.span)
				require.GreaterOrEqual(t, firstFiring-firstActive, alert.HoldDuration(), "%s waits its for before firing", c.alert)
				checkFiring(t, alert, firing, c.labels)
			case resolves:
				require.GreaterOrEqual(t, firstFiring, time.Duration(0), "%s fired during the scenario", c.alert)
				require.Empty(t, firing, "%s no longer fires at %s", c.alert, c.span)
			}
		})
	}
}

// checkFiring checks that one firing alert carries want and the rule's
// severity, and that every alert's annotations expanded without error.
func checkFiring(t *testing.T, rule *rules.AlertingRule, firing []*rules.Alert, want map[string]string) {
	t.Helper()
	var sets []string
	matched := false
	for _, a := range firing {
		require.Equal(t, rule.Labels().Get("severity"), a.Labels.Get("severity"))
		for _, n := range []string{"summary", "description"} {
			text := a.Annotations.Get(n)
			require.NotEmpty(t, text, n)
			for _, bad := range []string{"<no value>", "error expanding", "error executing"} {
				require.NotContains(t, text, bad, "%s of %s expands", n, rule.Name())
			}
		}
		ok := true
		for k, v := range want {
			ok = ok && a.Labels.Get(k) == v
		}
		matched = matched || ok
		sets = append(sets, a.Labels.String())
	}
	require.True(t, matched, "one firing alert carries %v; got %s", want, strings.Join(sets, " "))
}

// TestOperationsDocNamesEveryAlert keeps docs/OPERATIONS.md honest: the
// on-call engineer looks an alert up there by name.
func TestOperationsDocNamesEveryAlert(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "OPERATIONS.md"))
	require.NoError(t, err)
	for _, g := range parsedRuleGroups(t) {
		for _, r := range g.Rules {
			if r.Alert != "" {
				require.Contains(t, string(doc), r.Alert, "docs/OPERATIONS.md explains %s", r.Alert)
			}
		}
	}
}

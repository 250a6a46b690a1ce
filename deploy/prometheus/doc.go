// Package prometheus holds no code: it is the Go module that tests Encore's
// Prometheus rules (rules/recording.yml, rules/alerts.yml) and its Grafana
// dashboard (../grafana/dashboards/encore-sale.json) with Prometheus's own
// packages, so a rule is checked by the parser and engine that run it in
// production rather than by string matching.
//
// It is a module of its own because github.com/prometheus/prometheus brings
// a large dependency graph that Encore's binary must not carry. Run its
// tests with
//
//	cd deploy/prometheus && go test ./...
//
// (the Taskfile's test task does, when given no package arguments).
package prometheus

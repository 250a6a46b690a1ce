package rehearsal

import (
	"encoding/base64"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"strconv"
)

// row is one line of the report's summary table.
type row struct {
	Name, Value, Meaning string
	Bad                  bool
}

// writeReport writes dir/report.html: self-contained (the plots embedded
// as data URIs, each also linked to its file beside the report, no script,
// no font or style from elsewhere), a table of the summary, the problems by
// call, and the figures.
func writeReport(dir string, s *Summary, figs []figure) error {
	type fig struct {
		figure
		Data template.URL
	}
	var embedded []fig
	for _, f := range figs {
		raw, err := os.ReadFile(filepath.Join(dir, f.File))
		if err != nil {
			return err
		}
		embedded = append(embedded, fig{f, template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(raw))})
	}
	out, err := os.Create(filepath.Join(dir, "report.html"))
	if err != nil {
		return err
	}
	err = reportPage.Execute(out, map[string]any{"S": s, "Rows": summaryRows(s), "Figures": embedded,
		"Calls": sortedKeys(s.ErrorsByCall), "Verdict": verdict(s)})
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

func verdict(s *Summary) string {
	switch {
	case !s.BooksChecked:
		return "The books were not checked."
	case s.Failed():
		return "A rule broke: see double_sales, unmatched_captures and the audit below."
	}
	return "No double sale, every captured payment matched: the books balance."
}

func ms(v float64) string   { return strconv.FormatFloat(v, 'f', 0, 64) + " ms" }
func num(v int64) string    { return strconv.FormatInt(v, 10) }
func secs(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) + " s" }

func opt(v *float64, format func(float64) string) string {
	if v == nil {
		return "n/a"
	}
	return format(*v)
}

// summaryRows are the contract's fields first, then the mix's outcomes.
func summaryRows(s *Summary) []row {
	tau := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	return []row{
		{"fans", num(s.Fans), "fans who arrived", false},
		{"admitted", num(s.Admitted), "let into checkout by the waiting room", false},
		{"holds", num(s.Holds), fmt.Sprintf("holds granted, of %d attempts (%d conflicts)", s.HoldAttempts, s.HoldConflicts), false},
		{"bookings_paid", num(s.BookingsPaid), fmt.Sprintf("bookings seen PAID (%d seats of %d)", s.SeatsPaid, s.Seats), false},
		{"goodput_per_s", strconv.FormatFloat(s.GoodputPerS, 'f', 2, 64), "paid bookings a second, opening to the last", false},
		{"goodput_90_per_s", strconv.FormatFloat(s.Goodput90PerS, 'f', 2, 64), "the first 90% of them a second, opening to the last of those", false},
		{"hold_p50_ms", ms(s.HoldP50MS), "POST /v1/holds, every answered attempt", false},
		{"hold_p99_ms", ms(s.HoldP99MS), "", false},
		{"hold_to_paid_p99_ms", ms(s.HoldToPaidP99MS), fmt.Sprintf("granted hold to PAID seen (p50 %s), fan's pause included", ms(s.HoldToPaidP50MS)), false},
		{"double_sales", num(s.DoubleSales), "seats with more than one live owner (inventory audit)", s.DoubleSales > 0},
		{"unmatched_captures", strconv.Itoa(s.UnmatchedCaptures), "captured payments without exactly one PAID booking or one full refund", s.UnmatchedCaptures > 0},
		{"fairness_kendall_tau", opt(s.FairnessKendallTau, tau), "tau-b of place in the queue against time of purchase", false},
		{"sold_out_after_s", opt(s.SoldOutAfterS, secs), "opening to nothing left (every seat held or sold)", false},
		{"saga lag", ms(s.SagaLagP50MS) + " / " + ms(s.SagaLagP99MS), "checkout answered to PAID seen, p50 / p99", false},
		{"checkout", ms(s.CheckoutP50MS) + " / " + ms(s.CheckoutP99MS), fmt.Sprintf("POST checkout, p50 / p99, %d calls", s.Checkouts), false},
		{"abandoned", fmt.Sprintf("%d released, %d left to expire", s.AbandonedDeleted, s.AbandonedExpired), "", false},
		{"payments", fmt.Sprintf("%d declined then retried, 3-D Secure %d completed / %d failed, %d stepped up", s.Declines,
			s.ThreeDSCompleted, s.ThreeDSFailed, s.SteppedUp), "", false},
		{"cancels", fmt.Sprintf("%d of %d asked", s.Cancelled, s.CancelsAsked), "", false},
		{"fans without tickets", fmt.Sprintf("%d told sold out, %d gave up queueing, %d admitted but found nothing", s.SoldOutFans, s.GaveUp, s.FoundNothing), "", false},
		{"bookings not paid", fmt.Sprintf("%d ended unpaid, %d unsettled at the deadline", s.NotPaid, s.Unsettled), "", false},
		{"stack memory", fmt.Sprintf("%.0f MiB highest, %.0f MiB last", float64(s.StackRSSMaxBytes)/(1<<20), float64(s.StackRSSLastBytes)/(1<<20)), "resident set of the API process (/metrics)", false},
		{"audit violations", num(s.AuditViolations), fmt.Sprintf("every rule of the inventory audit, read %d time(s)", s.SettleRuns), s.AuditViolations > 0},
		{"payments reconciled", fmt.Sprintf("%d checked, %d captured", s.Reconciled, s.Captured), fmt.Sprintf("after %d run(s)", s.ReconcileRetries), false},
		{"duration", secs(s.DurationS), fmt.Sprintf("opened %s after the start", secs(s.OpenedAfterS)), false},
		{"source addresses", strconv.Itoa(s.SourceAddresses), "loopback addresses the fans came from", false},
		{"transfers_accepted", fmt.Sprintf("%d of %d", s.TransfersAccepted, s.TransfersOffered), "tickets given to a friend who accepted them, of those offered", false},
		{"packages_paid", fmt.Sprintf("%d (%d held)", s.PackagesPaid, s.PackageHolds), "seats with a hotel room for the night, paid in one booking", false},
		{"resale_paid", fmt.Sprintf("%d (%d listed, %d held)", s.ResalePaid, s.Listed, s.ResaleHolds), "resale listings bought and paid by fans who found nothing else", false},
	}
}

var reportPage = template.Must(template.New("report").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Rehearsal of {{.S.EventID}}</title>
<style>
body { font: 15px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 62rem; padding: 0 1rem; color: #17202a; }
table { border-collapse: collapse; margin: 1rem 0; }
th, td { text-align: left; padding: .3rem .8rem; border-bottom: 1px solid #d5d8dc; vertical-align: top; }
td.v { font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.bad td { background: #fdecea; font-weight: 600; }
figure { margin: 2rem 0; }
img { max-width: 100%; border: 1px solid #d5d8dc; }
figcaption { color: #515a5a; margin-top: .4rem; }
code { font-size: 90%; }
</style>
</head>
<body>
<h1>Flash-sale rehearsal: {{.S.EventID}}</h1>
<p>{{.S.Fans}} fans arriving {{.S.Mix.ArrivalRate}} a second for at most {{.S.Mix.Duration}} (drain {{.S.Mix.Drain}}) against
<code>{{.S.API}}</code>, started {{.S.StartedAt.Format "2006-01-02 15:04:05 UTC"}}; {{.S.Seats}} seats, {{.S.SeatsAvailable}} available
at the start{{if .S.Metered}}, metered by the waiting room{{end}}.</p>
<p><strong>{{.Verdict}}</strong></p>
<h2>Summary</h2>
<table>
<tr><th>field</th><th>value</th><th>meaning</th></tr>
{{range .Rows}}<tr{{if .Bad}} class="bad"{{end}}><td><code>{{.Name}}</code></td><td class="v">{{.Value}}</td><td>{{.Meaning}}</td></tr>
{{end}}</table>
<p>The mix: abandon {{.S.Mix.Abandon}}, decline {{.S.Mix.Decline}}, 3-D Secure {{.S.Mix.ThreeDS}} (failed {{.S.Mix.ThreeDSFail}}),
cancel {{.S.Mix.Cancel}}, transfer {{.S.Mix.Transfer}}, resell {{.S.Mix.Resell}}, package {{.S.Mix.Package}} ({{.S.Mix.PackageRooms}} rooms), think {{.S.Mix.Think}}, up to {{.S.Mix.MaxSeats}} seats a fan, seed {{.S.Mix.Seed}},
at most {{.S.Mix.Concurrency}} requests in flight in each of two lanes (queueing, buying), {{.S.Mix.FansPerAddress}} fans an address. Every number is also in
<a href="summary.json">summary.json</a>.</p>
{{if .S.Mismatches}}<h2>Unmatched captures</h2><ul>{{range .S.Mismatches}}<li><code>{{.}}</code></li>{{end}}</ul>{{end}}
{{if .S.AuditError}}<p class="bad">Audit failed: {{.S.AuditError}}</p>{{end}}
{{if .S.ReconcileError}}<p class="bad">Reconciliation failed: {{.S.ReconcileError}}</p>{{end}}
<h2>Problems by call</h2>
<table>
<tr><th>call</th><th>problem</th><th>answers</th></tr>
{{range $call := .Calls}}{{range $name, $n := index $.S.ErrorsByCall $call}}<tr><td>{{$call}}</td><td>{{$name}}</td><td class="v">{{$n}}</td></tr>
{{end}}{{end}}</table>
{{range .Figures}}<figure>
<h2>{{.Title}}</h2>
<a href="{{.File}}"><img src="{{.Data}}" alt="{{.Title}}"></a>
<figcaption>{{.Caption}}</figcaption>
</figure>
{{end}}</body>
</html>
`))

package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/dev/demo"
	"github.com/encore-tickets/encore/dev/stack"
	"github.com/encore-tickets/encore/dev/topology"
	"github.com/encore-tickets/encore/system"
)

// SplitAPIs and SplitWorkers are how many encore api and encore worker
// processes encore dev --split runs.
const (
	SplitAPIs    = 2
	SplitWorkers = 2
)

// runSplit is encore dev --split: the deployed topology on this machine,
// each part its own process. A Temporal server and its Web UI, the payment
// sandbox, two encore worker and two encore api behind a balancer on the
// fans' address (ENCORE_HTTP_ADDR, as encore dev), PostgreSQL (fsync on)
// with a streaming replica for the browse plane, Redis as a master and a
// replica under a sentinel, the venue gate serving the demo night's
// manifest, and Mailpit for the emails. The demo events are seeded. Each part's pid and log are
// listed; Ctrl-C stops them all. Everything listens on loopback.
// bin is the encore binary each part runs; ready, when set, is told once
// everything is up.
func runSplit(ctx context.Context, cfg config.Config, bin string, out io.Writer, ready func(*topology.Cluster)) error {
	env := map[string]string{"ENCORE_LOG_LEVEL": "info"}
	mailpit, err := stack.ProvideMail(ctx, cfg, out)
	if err != nil {
		fmt.Fprintf(out, "mailpit not started (emails go to each process's mailbox folder): %v\n", err)
	}
	if mailpit != nil {
		defer func() { _ = mailpit.Stop() }()
		env["ENCORE_SMTP_URL"] = mailpit.SMTPURL()
	}
	fmt.Fprintln(out, "starting the split topology (a minute or two: PostgreSQL, its replica, Redis, Temporal, then the processes)")
	c, err := startSplit(ctx, topology.Options{Binary: bin, Dir: system.DataPath(cfg, "split"), APIs: SplitAPIs, Workers: SplitWorkers,
		Durable: true, Replica: topology.StreamingReplica, Sentinel: true, FansThroughBalancer: true, BalancerAddr: cfg.HTTPAddr, Env: env, Log: out})
	if err != nil {
		return fmt.Errorf("encore dev --split: %w", err)
	}
	defer c.Close()
	if err := c.Seed(ctx); err != nil {
		return err
	}
	if err := c.StartGate(ctx, demo.DemoNightID); err != nil {
		return err
	}
	listSplit(out, c, mailpit != nil, cfg)
	if ready != nil {
		ready(c)
	}
	<-ctx.Done()
	fmt.Fprintln(out, "stopping the split topology")
	return nil
}

// startSplit starts the topology, again (three times at most) when a
// port it had picked was taken by another program before its part bound
// it: the ports are free when picked, not reserved.
func startSplit(ctx context.Context, opts topology.Options) (*topology.Cluster, error) {
	for attempt := 1; ; attempt++ {
		c, err := topology.Start(ctx, opts)
		if !portClash(err) || attempt == 3 {
			return c, err
		}
		fmt.Fprintf(opts.Log, "a port was taken meanwhile (%v); starting again\n", err)
	}
}

// portClash says a start failed because a port it picked was taken.
func portClash(err error) bool {
	return err != nil && strings.Contains(err.Error(), "address already in use")
}

// listSplit prints each part: what it is, its pid, where it listens and
// its log.
func listSplit(out io.Writer, c *topology.Cluster, mail bool, cfg config.Config) {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PART\tPID\tURL\tLOG")
	fmt.Fprintf(tw, "fans (balancer)\t%d\t%s\t-\n", os.Getpid(), c.BalancerURL)
	for _, p := range c.All() {
		at := p.URL
		switch p.Name {
		case "temporal":
			at = c.TemporalAddr + " (Web UI " + c.TemporalUIURL + ")"
		case "psp":
			at = c.PSPURL
		}
		if at == "" {
			at = p.AdminURL
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", p.Name, p.Pid(), at, p.LogPath)
	}
	fmt.Fprintf(tw, "postgresql\t-\t%s\t-\n", redact(c.DatabaseURL))
	if c.ReaderURL != "" {
		fmt.Fprintf(tw, "replica (browse plane)\t-\t%s\t-\n", redact(c.ReaderURL))
	}
	fmt.Fprintf(tw, "redis (sentinel)\t-\t%s\t-\n", redact(c.RedisURL))
	if mail {
		fmt.Fprintf(tw, "mailpit\t-\thttp://%s\t-\n", cfg.MailpitHTTPAddr)
	}
	_ = tw.Flush()
	fmt.Fprintf(out, "ready: the fan app at %s/, the Temporal Web UI at %s; Ctrl-C stops everything\n", c.BalancerURL, c.TemporalUIURL)
}

// redact hides a URL's password: secrets are never printed.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unprintable URL)"
	}
	return u.Redacted()
}

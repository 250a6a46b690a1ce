package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/cobra"
)

// newProbeCmd is the container health check: the image carries no curl, and
// a health check that runs the binary it checks needs nothing else.
func newProbeCmd() *cobra.Command {
	timeout := 3 * time.Second
	cmd := &cobra.Command{
		Use:   "probe <url>",
		Short: "Exit 0 when a GET of the URL answers 2xx (container health checks)",
		Long: `probe sends one GET to the URL and exits 0 when it answers 2xx within --timeout,
1 otherwise. The compose file's health checks run it against /readyz of encore api
and /healthz of the admin listener, since the image has no curl.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return probeURL(cmd.Context(), args[0], timeout)
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", timeout, "how long to wait for the answer")
	return cmd
}

func probeURL(ctx context.Context, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return runError{err}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return runError{err}
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return runError{fmt.Errorf("%s answered %s", url, resp.Status)}
	}
	return nil
}

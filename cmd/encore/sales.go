package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/organiser"
	"github.com/encore-tickets/encore/store"
)

func newSalesCmd() *cobra.Command {
	var org, format string
	cmd := &cobra.Command{
		Use:   "sales <event_id> [--format csv]",
		Short: "Print an event's sales report per section",
		Long: `Prints what GET /v1/admin/events/{id}/sales answers: per section its
capacity, tickets sold, held (unexpired holds), blocked and available, the
revenue of paid bookings and what refunded bookings had cost (minor units of
the event's currency), and the totals. JSON by default, or CSV.`,
		Args: cobra.ExactArgs(1),
		RunE: action(func(cmd *cobra.Command, args []string, cfg config.Config) error {
			if format != "json" && format != "csv" {
				return fmt.Errorf("--format: json or csv, not %q", format)
			}
			pool, done, err := openDatabase(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			defer done()
			sales := &organiser.Sales{Reader: store.NewReader(pool)}
			r, err := sales.Report(cmd.Context(), scopeFor(org), args[0])
			if err != nil {
				return listed(err)
			}
			if format == "csv" {
				return r.WriteCSV(cmd.OutOrStdout())
			}
			return printJSON(cmd.OutOrStdout(), r)
		}),
	}
	cmd.Flags().StringVar(&org, "org", "", "act as this organisation's organiser (default: as an admin)")
	cmd.Flags().StringVar(&format, "format", "json", "json or csv")
	return cmd
}

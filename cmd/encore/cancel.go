package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/encore-tickets/encore/booking"
	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/system"
)

func newEventCancelCmd() *cobra.Command {
	var org, reason string
	cmd := &cobra.Command{
		Use:   "cancel <event_id> --reason <why>",
		Short: "Cancel an event: sales stop now, every paid booking is refunded",
		Long: `Cancels an event through the same service as POST /v1/admin/events/{id}/cancel:
the event becomes CANCELLED and its pending holds are released in one
transaction, then a job on the worker refunds every paid booking through its
own booking workflow (ENCORE_CANCEL_RATE a second), revokes the tickets and
emails the fans the reason. Shows the job's progress until it ends; running
it again follows the same job.`,
		Args: cobra.ExactArgs(1),
		RunE: action(func(cmd *cobra.Command, args []string, cfg config.Config) error {
			log := system.Logger(cfg, os.Stderr)
			p, err := system.New(cmd.Context(), cfg, log, cfg.DatabaseURL.Reveal(), cfg.RedisURL.Reveal(), temporalAddress(cfg))
			if err != nil {
				return err
			}
			defer p.Close()
			return runEventCancel(cmd.Context(), p.Bookings, cmd.OutOrStdout(), args[0], reason, org, 500*time.Millisecond)
		}),
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, sent to the fans and kept in the audit log (required)")
	cmd.Flags().StringVar(&org, "org", "", "act as this organisation's organiser (default: as an admin)")
	required(cmd, "reason")
	return cmd
}

// runEventCancel cancels the event and polls its job until it ends.
func runEventCancel(ctx context.Context, svc *booking.Service, out io.Writer, eventID, reason, org string, every time.Duration) error {
	who := session.Identity{UserID: actor(), Roles: []session.Role{session.Admin}}
	if org != "" {
		who = session.Identity{UserID: actor(), Roles: []session.Role{session.Organiser}, Org: org}
	}
	job, err := svc.CancelEvent(ctx, who, eventID, reason)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "job %s: refunding %d paid booking(s)\n", job.ID, job.Total)
	for job.Status == store.JobRunning {
		fmt.Fprintf(out, "\r%s", progressBar(job, 40))
		select {
		case <-ctx.Done():
			fmt.Fprintln(out)
			return ctx.Err()
		case <-time.After(every):
		}
		if job, err = svc.Job(ctx, job.ID); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "\r%s\n", progressBar(job, 40))
	if job.Status != store.JobDone {
		return fmt.Errorf("job %s %s: %d booking(s) not refunded (see GET /v1/admin/jobs/%s)", job.ID, job.Status, job.Failed, job.ID)
	}
	return nil
}

// progressBar draws [#####     ] done/total (failed).
func progressBar(j store.Job, width int) string {
	filled := width
	if j.Total > 0 {
		filled = min(width, (j.Done+j.Failed)*width/j.Total)
	}
	return fmt.Sprintf("[%s%s] %d/%d refunded, %d failed, %s", strings.Repeat("#", filled), strings.Repeat(" ", width-filled),
		j.Done, j.Total, j.Failed, j.Status)
}

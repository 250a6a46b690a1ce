package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/hotels"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/system"
)

func newHotelCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hotel",
		Short: "Hotel inventory: overbooking limits and walks",
		Long: `set-overbooking sets a room-night's overbooking limit, given or derived from
an accepted walk risk and a show rate; walk moves guests off an overbooked
night to another property, refunds the night and tells them.`,
		Args: cobra.NoArgs,
		RunE: needCommand,
	}
	cmd.AddCommand(newHotelOverbookingCmd(), newHotelWalkCmd())
	return cmd
}

type overbookingOptions struct {
	property, roomType, night string
	limit                     int
	walkRisk, showRate        float64
}

func newHotelOverbookingCmd() *cobra.Command {
	var o overbookingOptions
	cmd := &cobra.Command{
		Use:   "set-overbooking",
		Short: "Set a room-night's overbooking limit (--limit, or --walk-risk with --show-rate)",
		Long: `Sets how many rooms past its allotment one room-night may sell. Give --limit,
or --walk-risk and --show-rate: the limit is then the largest whose chance that
more guests arrive than there are rooms (exact binomial) stays under the risk.
A limit below what is already held and sold is refused.`,
		Args: cobra.NoArgs,
		RunE: action(func(cmd *cobra.Command, _ []string, cfg config.Config) error {
			return runSetOverbooking(cmd.Context(), cfg, o, cmd.Flags().Changed("limit"))
		}),
	}
	f := cmd.Flags()
	f.StringVar(&o.property, "property", "", "property ID (required)")
	f.StringVar(&o.roomType, "room-type", "", "room type ID (required)")
	f.StringVar(&o.night, "night", "", "the night, YYYY-MM-DD (required)")
	f.IntVar(&o.limit, "limit", 0, "rooms past the allotment")
	f.Float64Var(&o.walkRisk, "walk-risk", 0, "accepted probability of a walk, e.g. 0.03 (instead of --limit)")
	f.Float64Var(&o.showRate, "show-rate", 0, "probability that a booked guest shows up, e.g. 0.92 (with --walk-risk)")
	for _, name := range []string{"property", "room-type", "night"} {
		_ = cmd.MarkFlagRequired(name)
	}
	cmd.MarkFlagsMutuallyExclusive("limit", "walk-risk")
	cmd.MarkFlagsRequiredTogether("walk-risk", "show-rate")
	cmd.MarkFlagsOneRequired("limit", "walk-risk")
	return cmd
}

func runSetOverbooking(ctx context.Context, cfg config.Config, o overbookingOptions, byLimit bool) error {
	night, err := time.Parse(time.DateOnly, o.night)
	if err != nil {
		return fmt.Errorf("--night: want YYYY-MM-DD: %w", err)
	}
	pool, done, err := openDatabase(ctx, cfg)
	if err != nil {
		return err
	}
	defer done()
	st := store.New(pool, store.Options{})
	limit := o.limit
	if !byLimit {
		rn, err := st.Hotels.RoomNightCounters(ctx, o.property, o.roomType, night)
		if err != nil {
			return err
		}
		if limit, err = hotels.OverbookLimit(rn.Allotment, o.showRate, o.walkRisk); err != nil {
			return err
		}
		fmt.Printf("allotment %d, show rate %.3f, walk risk at most %.3f: limit %d (risk %.4f)\n", rn.Allotment, o.showRate,
			o.walkRisk, limit, hotels.WalkRisk(rn.Allotment, rn.Allotment+limit, o.showRate))
	}
	rn, err := st.Hotels.SetOverbooking(ctx, o.property, o.roomType, night, limit)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("no room-night %s %s %s", o.property, o.roomType, o.night)
	}
	if err != nil {
		return err
	}
	fmt.Printf("%s %s %s: allotment %d, overbook limit %d, held %d, sold %d\n", rn.PropertyID, rn.RoomType,
		rn.Night.Format(time.DateOnly), rn.Allotment, rn.OverbookLimit, rn.Held, rn.Sold)
	return nil
}

func newHotelWalkCmd() *cobra.Command {
	var property, night string
	var rooms int
	cmd := &cobra.Command{
		Use:   "walk",
		Short: "Walk bookings off an overbooked night to another property",
		Long: `Makes sure --rooms bookings have been walked off the property's night: each
is moved to the property in the same city with the most rooms left, its
night refunded (recorded with a compensation) and its guest emailed, by the
walk workflow on the worker (encore dev or encore worker must be running).
Running it again walks nobody twice and finishes what is left.`,
		Args: cobra.NoArgs,
		RunE: action(func(cmd *cobra.Command, _ []string, cfg config.Config) error {
			return runWalk(cmd.Context(), cfg, property, night, rooms)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&property, "property", "", "property ID (required)")
	f.StringVar(&night, "night", "", "the night, YYYY-MM-DD (required)")
	f.IntVar(&rooms, "rooms", 0, "how many bookings to walk (required)")
	for _, name := range []string{"property", "night", "rooms"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}

func runWalk(ctx context.Context, cfg config.Config, property, night string, rooms int) error {
	d, err := time.Parse(time.DateOnly, night)
	if err != nil {
		return fmt.Errorf("--night: want YYYY-MM-DD: %w", err)
	}
	p, err := system.New(ctx, cfg, system.Logger(cfg, os.Stderr), cfg.DatabaseURL.Reveal(), cfg.RedisURL.Reveal(), temporalAddress(cfg))
	if err != nil {
		return err
	}
	defer p.Close()
	walks, err := p.Bookings.Walk(ctx, hotels.WalkRequest{PropertyID: property, Night: d, Rooms: rooms})
	for _, wk := range walks {
		to := wk.ToProperty + "/" + wk.ToRoomType
		if wk.Outcome == store.WalkCancelled {
			to = "nowhere (booking cancelled and refunded in full)"
		}
		fmt.Printf("booking %s: %s/%s -> %s, refund %d, compensation %d %s, notified %t\n", wk.ReservationID,
			wk.FromProperty, wk.FromRoomType, to, wk.Refund, wk.Compensation, wk.Currency, wk.Notified)
	}
	return err
}

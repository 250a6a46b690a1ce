package waitingroom

import (
	"context"
	"log/slog"
	"strings"

	"github.com/redis/go-redis/v9"
)

// notices carry admissions and sell-outs from whoever decides them (the
// admitter's ticks, the waitlist's offers) to every process's queue sockets
// at once, over the room's one Pub/Sub channel. A lost notice costs only
// time: the sockets' periodic refresh finds the same states.
type notices struct {
	rdb     redis.UniversalClient
	channel string
	log     *slog.Logger
}

// publish tells every process that kind ("admitted" with the users, or
// "soldout") happened in the event.
func (n *notices) publish(ctx context.Context, eventID, kind string, users []string) {
	msg := eventID + "\n" + kind
	if len(users) > 0 {
		msg += "\n" + strings.Join(users, "\n")
	}
	if err := n.rdb.Publish(ctx, n.channel, msg).Err(); err != nil {
		n.log.Debug("waiting room: publish", "err", err)
	}
}

// subscribe listens to the channel until the subscription is closed.
func (n *notices) subscribe(ctx context.Context) *redis.PubSub {
	return n.rdb.Subscribe(ctx, n.channel)
}

package store

import (
	"encoding/json"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Outbox topics. The relay publishes rows in ID order.
const (
	// TopicInventoryChanged: seats of an event changed. The payload names the
	// event and either one section, {"event_id", "section_id"} (a release, an
	// expiry, a sale, and holds written before one row per hold), or every
	// section a hold took from, {"event_id", "section_ids"}. The key names the
	// sections, comma-separated: a single section's row is keyed by it either
	// way.
	TopicInventoryChanged = "inventory.changed"
)

func queueOutbox(b *pgx.Batch, topic, key string, payload any) {
	body, _ := json.Marshal(payload) // payloads are plain maps of strings, lists and times
	b.Queue(`INSERT INTO outbox (topic, key, payload) VALUES ($1, $2, $3)`, topic, key, json.RawMessage(body))
}

func queueInventoryChanged(b *pgx.Batch, eventID, sectionID string) {
	queueOutbox(b, TopicInventoryChanged, sectionID, map[string]string{"event_id": eventID, "section_id": sectionID})
}

// queueSectionsChanged queues one inventory.changed row for every section of
// one change, sorted, however many there are.
func queueSectionsChanged(b *pgx.Batch, eventID string, sectionIDs []string) {
	queueOutbox(b, TopicInventoryChanged, strings.Join(sectionIDs, ","),
		map[string]any{"event_id": eventID, "section_ids": sectionIDs})
}

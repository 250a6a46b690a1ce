package store

import (
	"encoding/json"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Outbox topics. The relay publishes rows in ID order.
const (
	// TopicInventoryChanged: seats of an event changed availability. The
	// payload names the event and either one section, {"event_id",
	// "section_id"} (a release, an expiry, and sales and holds written before
	// the sale stopped writing one and the hold wrote one row), or every
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
	topic, key, payload := sectionsChanged(eventID, sectionIDs)
	queueOutbox(b, topic, key, payload)
}

// sectionsChanged is the outbox row of one change to sectionIDs (sorted) of
// an event: its topic, key and payload. A hold writes it inside its own
// statement (holdWritesSQL); every other change through queueSectionsChanged.
// One row per change, not per section, keeps the outbox and the relay's
// work per hold constant.
func sectionsChanged(eventID string, sectionIDs []string) (topic, key string, payload json.RawMessage) {
	body, _ := json.Marshal(map[string]any{"event_id": eventID, "section_ids": sectionIDs}) // strings only
	return TopicInventoryChanged, strings.Join(sectionIDs, ","), body
}

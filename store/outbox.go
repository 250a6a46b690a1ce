package store

import (
	"encoding/json"

	"github.com/jackc/pgx/v5"
)

// Outbox topics. The relay publishes rows in ID order.
const (
	// TopicInventoryChanged: a section's seats changed; key is the section.
	TopicInventoryChanged = "inventory.changed"
)

func queueOutbox(b *pgx.Batch, topic, key string, payload any) {
	body, _ := json.Marshal(payload) // payloads are plain maps of strings and times
	b.Queue(`INSERT INTO outbox (topic, key, payload) VALUES ($1, $2, $3)`, topic, key, json.RawMessage(body))
}

func queueInventoryChanged(b *pgx.Batch, eventID, sectionID string) {
	queueOutbox(b, TopicInventoryChanged, sectionID, map[string]string{"event_id": eventID, "section_id": sectionID})
}

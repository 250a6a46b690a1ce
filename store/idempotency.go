package store

import (
	"bytes"
	"context"
	"errors"
	"hash/fnv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// StoredResponse is what an Idempotency-Key already answered. Body is the
// exact bytes of the first answer; it is nil when the hold committed but its
// body was never saved (the process stopped in between), and then
// ReservationID names the hold to render it from.
type StoredResponse struct {
	Body          []byte
	ReservationID uuid.UUID
}

const idemScopeHold = "hold"

// idempotencyTTL is how long a stored response answers retries.
const idempotencyTTL = 24 * time.Hour

// errNoStoredAnswer: a hold record with neither a body nor a reservation
// cannot be replayed; only hand edits of the table make one.
var errNoStoredAnswer = errors.New("store: idempotency record has neither a body nor a reservation")

// LookupIdempotent returns a stored response for (user, key) when one exists
// and is younger than 24 hours: ErrKeyReused when its request differs. It is
// the cheap, lock-free check before any work; CreateHold checks again under
// the key's lock.
func (s *Holds) LookupIdempotent(ctx context.Context, userID, key string, hash []byte) (*StoredResponse, error) {
	return lookupIdempotent(ctx, s.pool, userID, idemScopeHold, key, hash)
}

// RememberKey records which request an Idempotency-Key of scope belongs to,
// for endpoints whose answers are replayed elsewhere (a workflow Update ID):
// the same key with another request is ErrKeyReused.
func (s *Holds) RememberKey(ctx context.Context, userID, scope, key string, hash []byte) error {
	if _, err := s.pool.Exec(ctx, `INSERT INTO idempotency_keys (user_id, scope, key, request_hash, response_status, response_body)
		VALUES ($1, $2, $3, $4, 0, '{}') ON CONFLICT (user_id, scope, key) DO NOTHING`, userID, scope, key, hash); err != nil {
		return inputError(err)
	}
	var stored []byte
	if err := s.pool.QueryRow(ctx, `SELECT request_hash FROM idempotency_keys WHERE user_id = $1 AND scope = $2 AND key = $3`,
		userID, scope, key).Scan(&stored); err != nil {
		return err
	}
	if !bytes.Equal(stored, hash) {
		return ErrKeyReused
	}
	return nil
}

type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// lookupSQL reads a stored response younger than idempotencyTTL.
const lookupSQL = `SELECT request_hash, response_bytes, response_body::text, reservation_id
	FROM idempotency_keys
	WHERE user_id = $1 AND scope = $2 AND key = $3 AND created_at > now() - $4::interval`

func lookupIdempotent(ctx context.Context, q querier, userID, scope, key string, hash []byte) (*StoredResponse, error) {
	return scanIdempotent(q.QueryRow(ctx, lookupSQL, userID, scope, key, idempotencyTTL.String()), hash)
}

// scanIdempotent reads lookupSQL's row: nil when there is none.
func scanIdempotent(row pgx.Row, hash []byte) (*StoredResponse, error) {
	var stored []byte
	var legacy *string
	var reservationID *uuid.UUID
	var resp StoredResponse
	err := row.Scan(&stored, &resp.Body, &legacy, &reservationID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(stored, hash) {
		return nil, ErrKeyReused
	}
	if reservationID != nil {
		resp.ReservationID = *reservationID
	}
	if resp.Body == nil && legacy != nil {
		// Written before bodies were kept as bytes: the re-encoded jsonb is
		// the best there is until the record expires.
		resp.Body = []byte(*legacy)
	}
	if resp.Body == nil && reservationID == nil {
		return nil, errNoStoredAnswer
	}
	return &resp, nil
}

// errReplay stops the hold's first round trip at the key's stored response:
// the steps queued after the claim are not checked.
var errReplay = errors.New("store: the idempotency key already answered")

// queueClaimKey queues the key's lock, held for the rest of the transaction,
// and the lookup of its stored response, which it sets in *prev (returning
// errReplay) when an earlier request already answered.
func queueClaimKey(b *pgx.Batch, req HoldRequest, prev **StoredResponse) {
	// Concurrent duplicates queue here (bounded by lock_timeout).
	b.Queue(`SELECT pg_advisory_xact_lock($1)`, idempotencyLockKey(req.UserID, idemScopeHold, req.IdempotencyKey)).Fn =
		func(br pgx.BatchResults) error {
			_, err := br.Exec()
			if code, _ := pgCode(err); code == pgLockNotAvailable {
				return ErrRequestInProgress
			}
			return err
		}
	b.Queue(lookupSQL, req.UserID, idemScopeHold, req.IdempotencyKey, idempotencyTTL.String()).QueryRow(func(row pgx.Row) error {
		stored, err := scanIdempotent(row, req.RequestHash)
		if stored != nil {
			*prev = stored
			return errReplay
		}
		return err
	})
}

// queueKeyRecord records the key's hold and its answer, rendered from the
// complete hold by req.Render, in the hold's transaction: nothing without a
// key, and a record without bytes without a Render (a replay then renders
// the answer from the hold).
func queueKeyRecord(b *pgx.Batch, req HoldRequest, hold Hold) error {
	if req.IdempotencyKey == "" {
		return nil
	}
	var body []byte
	if req.Render != nil {
		var err error
		if body, err = req.Render(hold); err != nil {
			return err
		}
	}
	b.Queue(`INSERT INTO idempotency_keys (user_id, scope, key, request_hash, response_status, reservation_id, response_bytes)
		VALUES ($1, $2, $3, $4, 201, $5, $6)
		ON CONFLICT (user_id, scope, key) DO UPDATE SET request_hash = EXCLUDED.request_hash,
			response_status = EXCLUDED.response_status, response_body = NULL, response_bytes = EXCLUDED.response_bytes,
			reservation_id = EXCLUDED.reservation_id, created_at = now()`,
		req.UserID, idemScopeHold, req.IdempotencyKey, req.RequestHash, req.ReservationID, body)
	return nil
}

// sendKeyRecord records the key of a hold that is complete only after its
// first batch went out (a package's stays, a resale's listings): its own
// round trip in the hold's transaction.
func sendKeyRecord(ctx context.Context, tx pgx.Tx, req HoldRequest, hold Hold) error {
	b := &pgx.Batch{}
	if err := queueKeyRecord(b, req, hold); err != nil {
		return err
	}
	return tx.SendBatch(ctx, b).Close()
}

// idempotencyLockKey is the advisory lock of one (user, scope, key). A hash
// collision only makes two unrelated requests queue briefly.
func idempotencyLockKey(parts ...string) int64 {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return int64(h.Sum64())
}

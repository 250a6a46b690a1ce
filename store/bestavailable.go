package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/encore-tickets/encore/vocab"
)

// maxAdjacentTries bounds how many candidate blocks one buyer tries to lock.
const maxAdjacentTries = 128

// pickAdjacent finds quantity adjacent AVAILABLE seats in one row of a seated
// section and locks them for the calling transaction; it returns their IDs
// sorted, ready for takeSeats. For a general-admission section it returns
// nothing (the counted path needs no seat IDs).
//
// Candidates come from the statement's snapshot without locks: every run of
// consecutive free seats in a row, cut into non-overlapping blocks of
// quantity, best first (front rows, then nearest the row's centre). Each block
// is then locked with FOR UPDATE SKIP LOCKED: a block another buyer is
// locking, or that was taken since the snapshot, comes back short and the
// next block is tried. Concurrent buyers therefore spread over different
// blocks instead of queueing on the same best seats, and nobody waits on a
// row lock, so there is no deadlock. A short block leaves a few seats locked
// until this transaction ends (milliseconds); others skip them meanwhile.
func pickAdjacent(ctx context.Context, tx pgx.Tx, eventID, sectionID string, quantity int) ([]string, error) {
	var kind vocab.SectionKind
	err := tx.QueryRow(ctx, `SELECT kind FROM sections WHERE id = $1 AND event_id = $2`, sectionID, eventID).Scan(&kind)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, &InvalidError{Field: "section_id", Message: "no such section in this event"}
	}
	if err != nil {
		return nil, err
	}
	if kind != vocab.SectionSeated {
		return nil, nil
	}
	rows, err := tx.Query(ctx, `
		WITH free AS (
			SELECT id, row_label, number,
			       number - row_number() OVER (PARTITION BY row_label ORDER BY number) AS run
			FROM seats WHERE section_id = $1 AND event_id = $2 AND status = 'AVAILABLE'),
		runs AS (
			SELECT row_label, array_agg(id ORDER BY number) AS ids, array_agg(number ORDER BY number) AS numbers
			FROM free GROUP BY row_label, run HAVING count(*) >= $3),
		mids AS (
			SELECT row_label, (min(number) + max(number)) / 2.0 AS mid FROM seats
			WHERE section_id = $1 AND row_label IN (SELECT row_label FROM runs) GROUP BY row_label)
		SELECT runs.row_label, runs.ids, runs.numbers, mids.mid::float8 FROM runs JOIN mids USING (row_label)`,
		sectionID, eventID, quantity)
	if err != nil {
		return nil, err
	}
	type block struct {
		row      string
		ids      []string
		distance float64
	}
	var blocks []block
	for rows.Next() {
		var (
			row     string
			ids     []string
			numbers []int
			mid     float64
		)
		if err := rows.Scan(&row, &ids, &numbers, &mid); err != nil {
			rows.Close()
			return nil, err
		}
		for i := 0; i+quantity <= len(ids); i += quantity {
			centre := float64(numbers[i]+numbers[i+quantity-1]) / 2
			blocks = append(blocks, block{row: row, ids: ids[i : i+quantity], distance: math.Abs(centre - mid)})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(blocks, func(a, b block) int {
		return cmp.Or(cmp.Compare(len(a.row), len(b.row)), cmp.Compare(a.row, b.row),
			cmp.Compare(a.distance, b.distance), cmp.Compare(a.ids[0], b.ids[0]))
	})
	for i, b := range blocks {
		if i == maxAdjacentTries {
			break
		}
		rows, err := tx.Query(ctx, `SELECT id FROM seats WHERE id = ANY($1) AND section_id = $2 AND status = 'AVAILABLE'
			FOR UPDATE SKIP LOCKED`, b.ids, sectionID)
		if err != nil {
			return nil, err
		}
		locked, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return nil, err
		}
		if len(locked) == quantity {
			slices.Sort(locked)
			return locked, nil
		}
	}
	return nil, &SeatUnavailableError{Alternatives: []string{},
		Detail: fmt.Sprintf("no %d adjacent seats are free in section %s", quantity, sectionID)}
}

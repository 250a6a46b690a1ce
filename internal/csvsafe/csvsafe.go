// Package csvsafe writes CSV that a spreadsheet opens without running
// anything: every CSV export of the product (the organiser's sales report,
// over HTTP and from the CLI) writes through its Writer, so a section name,
// title or any other text a user typed can never become a formula in the
// organiser's spreadsheet (OWASP, "CSV Injection").
//
// A cell is either text or a number, and the caller says which. Text that
// begins with =, +, -, @, a tab or a carriage return gets a leading single
// quote, which spreadsheets read as "this is text" and do not display.
// Numbers are cells the program formatted itself from an integer
// (Int), so they are written as they are: a negative amount stays -500 and
// stays a number the organiser can sum. Deciding by column rather than by
// looking at the value means a user's text that happens to look like a
// number ("-5") is still quoted: only the program's own numbers go out raw.
package csvsafe

import (
	"encoding/csv"
	"io"
	"strconv"
	"strings"
)

// Cell is one cell of a record: Text or Int.
type Cell struct{ s string }

// Text is a cell of text, neutralised by Neutralise.
func Text(s string) Cell { return Cell{Neutralise(s)} }

// Int is a numeric cell the program computed: written as the number it is.
func Int[N ~int | ~int32 | ~int64](n N) Cell { return Cell{strconv.FormatInt(int64(n), 10)} }

// Neutralise returns s as text a spreadsheet will not evaluate: s with a
// leading single quote when it begins with one of the characters that start
// a formula (=, +, -, @) or that spreadsheets skip before one (tab,
// carriage return); any other s unchanged.
func Neutralise(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// Writer writes records of cells as CSV.
type Writer struct{ w *csv.Writer }

// NewWriter writes CSV to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: csv.NewWriter(w)} }

// Write writes one record (buffered until Flush).
func (w *Writer) Write(cells ...Cell) error {
	rec := make([]string, len(cells))
	for i, c := range cells {
		rec[i] = c.s
	}
	return w.w.Write(rec)
}

// Header writes a header record of column names (text).
func (w *Writer) Header(names ...string) error {
	cells := make([]Cell, len(names))
	for i, n := range names {
		cells[i] = Text(n)
	}
	return w.Write(cells...)
}

// Flush writes what is buffered and returns the first error of any write.
func (w *Writer) Flush() error {
	w.w.Flush()
	return w.w.Error()
}

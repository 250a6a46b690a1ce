package system_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"github.com/encore-tickets/encore/dev/testenv"
)

// organiserUploads uploads the test layout (stalls and a standing floor)
// through the organiser app and leaves the tab on the upload's result.
func organiserUploads(t *testing.T, ctx context.Context, base string) {
	t.Helper()
	good, err := filepath.Abs(filepath.Join("testdata", "organiser_layout.json"))
	require.NoError(t, err)
	do(t, ctx, "the layout is uploaded",
		chromedp.Navigate(base+"/organiser/#/venues"),
		chromedp.WaitVisible(css(`#upload input[name=file]`)),
		chromedp.SetUploadFiles(css(`#upload input[name=file]`), []string{good}),
		chromedp.Click(css(`#uploadbtn`)),
		chromedp.WaitVisible(css(`#newhere`)),
	)
}

// organiserDrafts uploads the test layout and creates a draft on it at
// 45.50 in the stalls and 25 on the floor; it returns the draft's ID.
func organiserDrafts(t *testing.T, ctx context.Context, base, title string) string {
	t.Helper()
	organiserUploads(t, ctx, base)
	do(t, ctx, "a draft is created",
		chromedp.Click(css(`#newhere`)),
		chromedp.WaitVisible(css(`#newevent input[name="prices.stalls"]`)),
		chromedp.SetValue(css(`#newevent input[name=title]`), title),
		chromedp.SetValue(css(`#newevent input[name="prices.stalls"]`), "45.50"),
		chromedp.SetValue(css(`#newevent input[name="prices.standing"]`), "25"),
		chromedp.Click(css(`#create`)),
		chromedp.WaitVisible(css(`#publish`)),
	)
	return js(t, ctx, `decodeURIComponent(location.hash.split('/')[2])`)
}

// TestAnOrganiserEditsADraftsTypesFeeAndQuestionsSeesAFieldErrorBesideItsFieldAndOncePublishedOnlyTheEditableFields:
// on a draft's Edit tab the organiser changes its texts and limits, adds
// Adult (starting from the event's prices), Child (stalls only, at most
// four an order) and Student, removes Student, moves Child up and back,
// sets a service fee and asks every attendee's name. A bad type ID is
// refused and named beside its field; fixed, the draft is saved as typed.
// Published, the fixed fields are greyed and the title still changes.
func TestAnOrganiserEditsADraftsTypesFeeAndQuestionsSeesAFieldErrorBesideItsFieldAndOncePublishedOnlyTheEditableFields(t *testing.T) {
	t.Parallel()
	e, base := organiserStack(t)
	o := browser(t, 4*time.Minute)
	do(t, o, "a desktop", chromedp.EmulateViewport(1366, 900))
	suffix := testenv.RandomSuffix()
	organiserSignsIn(t, o, base, "olga_"+suffix, "org_edit_"+suffix)
	id := organiserDrafts(t, o, base, "Draft Night "+suffix)

	do(t, o, "the edit tab", chromedp.Navigate(base+"/organiser/#/event/"+id+"/edit"), chromedp.WaitVisible(css(`#editform`)))
	require.Equal(t, "false", js(t, o, `String(document.querySelector('#editform [name=currency]').disabled)`), "a draft may change anything")
	do(t, o, "texts and limits",
		chromedp.SetValue(css(`#editform [name=title]`), "Edited Night "+suffix),
		chromedp.SetValue(css(`#editform [name=artist]`), "The Editors"),
		chromedp.SetValue(css(`#editform [name=genre]`), "Jazz"),
		chromedp.SetValue(css(`#editform [name=description]`), "Now with child tickets."),
		chromedp.SetValue(css(`#editform [name=per_customer_limit]`), "4"),
		chromedp.SetValue(css(`#editform [name=hold_ttl_seconds]`), "300"),
		chromedp.SetValue(css(`#editform [name=service_fee]`), "1.50"),
	)
	// Types: the first starts from the event's prices; a name types its ID.
	do(t, o, "add Adult", chromedp.Click(css(`#addtype`)), chromedp.WaitVisible(css(`[name="ticket_types[0].name"]`)),
		chromedp.SendKeys(css(`[name="ticket_types[0].name"]`), "Adult"))
	require.Equal(t, "adult", js(t, o, `document.querySelector('[name="ticket_types[0].id"]').value`))
	require.Equal(t, "45.50", js(t, o, `document.querySelector('[name="ticket_types[0].prices.stalls"]').value`))
	require.Equal(t, "true", js(t, o, `String(document.getElementById('eventprices').hidden)`), "with types, the first type's prices are the event's")
	do(t, o, "add Child", chromedp.Click(css(`#addtype`)), chromedp.WaitVisible(css(`[name="ticket_types[1].name"]`)),
		chromedp.SendKeys(css(`[name="ticket_types[1].name"]`), "Child"),
		chromedp.SetValue(css(`[name="ticket_types[1].prices.stalls"]`), "20"),
		chromedp.SetValue(css(`[name="ticket_types[1].max_per_order"]`), "4"))
	do(t, o, "add Student and remove it", chromedp.Click(css(`#addtype`)), chromedp.WaitVisible(css(`[name="ticket_types[2].name"]`)),
		chromedp.SendKeys(css(`[name="ticket_types[2].name"]`), "Student"),
		chromedp.Click(css(`#types [data-remove="2"]`)))
	order := `[...document.querySelectorAll('#types tbody tr')].map(r => r.querySelector('[name$=".name"]').value).join(',')`
	require.Equal(t, "Adult,Child", js(t, o, order))
	do(t, o, "move Child up with the keyboard", chromedp.Focus(css(`#types [data-move=up][data-row="1"]`)), chromedp.KeyEvent(kb.Enter))
	require.Equal(t, "Child,Adult", js(t, o, order))
	require.Equal(t, "Move type 1 down", js(t, o, `document.activeElement.getAttribute('aria-label')`), "the focus follows the moved type")
	do(t, o, "and back down", chromedp.KeyEvent(kb.Enter))
	require.Equal(t, "Adult,Child", js(t, o, order))
	require.Equal(t, "20", js(t, o, `document.querySelector('[name="ticket_types[1].prices.stalls"]').value`), "what was typed moves with its type")
	// A question, with a type needing it.
	do(t, o, "ask every attendee's name", chromedp.Click(css(`#addquestion`)), chromedp.WaitVisible(css(`[name="questions[0].label"]`)),
		chromedp.SendKeys(css(`[name="questions[0].label"]`), "Attendee name"),
		chromedp.Click(css(`[name="questions[0].required"]`)))
	require.Equal(t, "attendee-name", js(t, o, `document.querySelector('[name="questions[0].id"]').value`))

	// A bad ID is named beside its field.
	do(t, o, "save with a bad type ID",
		chromedp.SetValue(css(`[name="ticket_types[1].id"]`), "Kid Ticket"),
		chromedp.Click(css(`#saveevent`)),
		chromedp.WaitVisible(css(`#editform .field-error[data-field="ticket_types[1].id"]`)))
	require.Contains(t, text(t, o, `#editform .field-error[data-field="ticket_types[1].id"]`), "lower-case letters")
	require.Equal(t, "true", js(t, o, `document.querySelector('[name="ticket_types[1].id"]').getAttribute('aria-invalid')`))
	require.Equal(t, "edit-errors", js(t, o, `document.activeElement.id`), "the list of problems takes the focus")
	require.Contains(t, js(t, o, `document.querySelector('[name="ticket_types[1].id"]').getAttribute('aria-describedby')`),
		js(t, o, `document.querySelector('#editform .field-error[data-field="ticket_types[1].id"]').id`), "the message describes the field")
	require.Equal(t, "Draft Night "+suffix, e.queryString(`SELECT title FROM events WHERE id = $1`, id), "nothing saved")
	requireAccessible(t, o, "the edit form with a field error")
	screenshot(t, o, "the edit form with a field error on a desktop")

	do(t, o, "save", chromedp.SetValue(css(`[name="ticket_types[1].id"]`), "child"),
		chromedp.Click(css(`#saveevent`)), chromedp.WaitVisible(css(`#saved`)))
	require.Empty(t, js(t, o, `String(document.querySelectorAll('#editform .field-error').length === 0 ? '' : 'left')`))
	require.Equal(t, "Edited Night "+suffix, e.queryString(`SELECT title FROM events WHERE id = $1`, id))
	require.Equal(t, "The Editors|Jazz|4|300|150", e.queryString(`SELECT artist || '|' || genre || '|' || per_customer_limit || '|' || hold_ttl_seconds || '|' || service_fee
		FROM events WHERE id = $1`, id))
	require.Equal(t, "adult:Adult:0:,child:Child:1:4", e.queryString(`SELECT string_agg(id || ':' || name || ':' || position || ':' || coalesce(max_per_order::text, ''), ',' ORDER BY position)
		FROM ticket_types WHERE event_id = $1`, id))
	require.Equal(t, "adult/stalls=4550,adult/standing=2500,child/stalls=2000", e.queryString(`SELECT string_agg(type_id || '/' || category || '=' || amount, ',' ORDER BY type_id, category)
		FROM ticket_type_prices WHERE event_id = $1`, id), "Child is not sold on the floor")
	require.Equal(t, "attendee-name:Attendee name:text:true:ticket", e.queryString(`SELECT string_agg(id || ':' || label || ':' || kind || ':' || required || ':' || per, ',')
		FROM event_questions WHERE event_id = $1`, id))
	require.Equal(t, "Edited Night "+suffix, strings.TrimSpace(js(t, o, `document.querySelector('h1').firstChild.textContent`)), "the header follows")
	require.Equal(t, "1.50", js(t, o, `document.querySelector('#editform [name=service_fee]').value`), "the form shows what was saved")

	// The overview lists the types, the fee and the question; publish.
	do(t, o, "the overview", chromedp.Navigate(base+"/organiser/#/event/"+id), chromedp.WaitVisible(css(`#typelist`)))
	require.Contains(t, text(t, o, `#typelist li[data-type=child]`), "stalls €20.00")
	require.Contains(t, text(t, o, `#servicefee`), "€1.50 per ticket")
	require.Contains(t, text(t, o, `#questionlist`), "Attendee name")
	do(t, o, "publish, confirming", chromedp.Click(css(`#publish`)), chromedp.WaitVisible(css(`#confirmpublish`)),
		chromedp.Click(css(`#confirmpublish`)), chromedp.WaitVisible(css(`#fanlink`)))

	// Published: the fixed fields are greyed, the rest still saves.
	do(t, o, "the published event's edit tab", chromedp.Navigate(base+"/organiser/#/event/"+id+"/edit"), chromedp.WaitVisible(css(`#editform`)))
	for _, name := range []string{"currency", "starts_at", "onsale_at", "service_fee", "metered", "ticket_types[0].id", "ticket_types[1].prices.stalls"} {
		require.Equal(t, "true", js(t, o, `String(document.querySelector('#editform [name="`+name+`"]').disabled)`), name+" is fixed once published")
	}
	require.Empty(t, js(t, o, `document.getElementById('addtype') ? 'shown' : ''`), "no types added once published")
	do(t, o, "retitle the published event", chromedp.SetValue(css(`#editform [name=title]`), "Published Night "+suffix),
		chromedp.Click(css(`#saveevent`)), chromedp.WaitVisible(css(`#saved`)))
	require.Equal(t, "Published Night "+suffix, e.queryString(`SELECT title FROM events WHERE id = $1`, id))
	requireAccessible(t, o, "a published event's edit form")
	screenshot(t, o, "a published event's edit form on a desktop")
	do(t, o, "a phone", chromedp.EmulateViewport(390, 844))
	requireNoSidewaysScroll(t, o, "a published event's edit form")
	requireAccessible(t, o, "a published event's edit form on a phone")
	screenshot(t, o, "a published event's edit form on a phone")
	do(t, o, "a small phone", chromedp.EmulateViewport(360, 740))
	requireNoSidewaysScroll(t, o, "a published event's edit form")
	do(t, o, "the attendees tab", chromedp.Navigate(base+"/organiser/#/event/"+id+"/attendees"), chromedp.WaitVisible(css(`#attendees`)))
	require.Equal(t, "Attendee name", text(t, o, `#attendees th[data-question=attendee-name]`), "a column per question")
	requireAccessible(t, o, "the attendees tab")
	requireNoSidewaysScroll(t, o, "the attendees tab")
}

// TestAnOrganiserSetsTheOrganisationsVATAndCreatesASeriesOfDates: the
// Organisation page keeps the legal data and the VAT rate (typed in
// percent, kept in basis points); a bad invoice prefix is named beside
// its field. A new series on the uploaded venue, with two dates, is
// refused while a date opens its sale after its start (named beside that
// date), then created and published: two events of one series.
func TestAnOrganiserSetsTheOrganisationsVATAndCreatesASeriesOfDates(t *testing.T) {
	t.Parallel()
	e, base := organiserStack(t)
	o := browser(t, 4*time.Minute)
	suffix := testenv.RandomSuffix()
	org := "org_vat_" + suffix
	organiserSignsIn(t, o, base, "olga_"+suffix, org)

	do(t, o, "the organisation page", chromedp.Navigate(base+"/organiser/#/org"), chromedp.WaitVisible(css(`#orgform`)))
	require.Equal(t, org, js(t, o, `document.getElementById('orgid').textContent`))
	require.Equal(t, "INV", js(t, o, `document.querySelector('#orgform [name=invoice_prefix]').value`), "the default prefix")
	do(t, o, "fill it in with a bad prefix",
		chromedp.SetValue(css(`#orgform [name=legal_name]`), "Vat Live BV"),
		chromedp.SetValue(css(`#orgform [name=address]`), "Damrak 1\n1012 LG Amsterdam"),
		chromedp.SetValue(css(`#orgform [name=vat_id]`), "NL000099998B57"),
		chromedp.SetValue(css(`#orgform [name=tax_rate_bp]`), "21"),
		chromedp.Click(css(`#orgform [name=prices_include_tax]`)),
		chromedp.SetValue(css(`#orgform [name=invoice_prefix]`), "inv-1"),
		chromedp.Click(css(`#saveorg`)),
		chromedp.WaitVisible(css(`#orgform .field-error[data-field=invoice_prefix]`)))
	require.Contains(t, text(t, o, `#orgform .field-error[data-field=invoice_prefix]`), "capital letters or digits")
	require.Zero(t, e.count(`SELECT count(*) FROM organisations WHERE id = $1`, org), "nothing saved")
	requireAccessible(t, o, "the organisation page with a field error")
	do(t, o, "save", chromedp.SetValue(css(`#orgform [name=invoice_prefix]`), "VAT1"), chromedp.Click(css(`#saveorg`)),
		chromedp.WaitVisible(css(`#orgsaved`)))
	require.Equal(t, "Vat Live BV|NL000099998B57|2100|false|VAT1", e.queryString(`SELECT legal_name || '|' || vat_id || '|' || tax_rate_bp || '|' || prices_include_tax || '|' || invoice_prefix
		FROM organisations WHERE id = $1`, org), "21 % kept as 2100 basis points")
	do(t, o, "the organisation page again", chromedp.Reload(), chromedp.WaitVisible(css(`#orgform`)))
	require.Equal(t, "21", js(t, o, `document.querySelector('#orgform [name=tax_rate_bp]').value`))
	require.Equal(t, "false", js(t, o, `String(document.querySelector('#orgform [name=prices_include_tax]').checked)`))

	// A series of two dates on a venue of the organisation.
	organiserUploads(t, o, base)
	do(t, o, "the new series form", chromedp.Navigate(base+"/organiser/#/series"), chromedp.WaitVisible(css(`#seriesform [name="prices.stalls"]`)),
		chromedp.SetValue(css(`#seriesform [name=title]`), "Residency "+suffix),
		chromedp.SetValue(css(`#seriesform [name="prices.stalls"]`), "30"),
		chromedp.SetValue(css(`#seriesform [name="prices.standing"]`), "15"),
		chromedp.SetValue(css(`#seriesform [name=service_fee]`), "1"),
		chromedp.Click(css(`#adddate`)),
		chromedp.WaitVisible(css(`[name="dates[1].starts_at"]`)),
		chromedp.SetValue(css(`[name="dates[1].onsale_at"]`), "2099-01-01T10:00"),
		chromedp.Click(css(`#createseries`)),
		chromedp.WaitVisible(css(`#seriesform .field-error[data-field="dates[1].onsale_at"]`)))
	require.Contains(t, text(t, o, `#seriesform .field-error[data-field="dates[1].onsale_at"]`), "before starts_at")
	require.Zero(t, e.count(`SELECT count(*) FROM series WHERE org_id = $1`, org), "nothing of the series written")
	requireAccessible(t, o, "the new series form with a date's error")
	onsale := js(t, o, `document.querySelector('[name="dates[0].onsale_at"]').value`)
	do(t, o, "create the series", chromedp.SetValue(css(`[name="dates[1].onsale_at"]`), onsale), chromedp.Click(css(`#createseries`)),
		chromedp.WaitVisible(css(`#created li[data-event]`)))
	series := js(t, o, `document.getElementById('created').dataset.series`)
	require.Equal(t, "2", js(t, o, `String(document.querySelectorAll('#created li[data-event]').length)`))
	require.Equal(t, 2, e.count(`SELECT count(*) FROM events WHERE series_id = $1 AND status = 'PUBLISHED' AND service_fee = 100 AND org_id = $2`, series, org))
	require.Equal(t, 2, e.count(`SELECT count(DISTINCT starts_at) FROM events WHERE series_id = $1`, series), "a day apart")
}

// queryString is one text value of a query (empty for NULL).
func (e *e2e) queryString(sql string, args ...any) string {
	e.t.Helper()
	var s *string
	require.NoError(e.t, e.store.Pool().QueryRow(context.Background(), sql, args...).Scan(&s), sql)
	if s == nil {
		return ""
	}
	return *s
}

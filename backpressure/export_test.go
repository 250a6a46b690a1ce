package backpressure

import "time"

// SetClock makes m read the time from now instead of the wall clock, so a
// test moves time on without sleeping. Set it before the monitor is used.
func (m *Monitor) SetClock(now func() time.Time) { m.now = now }

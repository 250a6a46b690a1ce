// Package rehearsal plays a whole flash sale against a running stack, through
// its real HTTP and WebSocket edge only, and then checks the stack's own books.
//
// Why it exists: unit tests prove each rule in isolation and benchmarks drive
// one path at a time, but a sale is all of them at once: thousands of fans,
// each its own account and device, arriving before and after opening, queueing
// on sockets with jittered heartbeats, contending for the same best seats,
// walking away from holds, paying with cards that decline or need 3-D Secure,
// and cancelling. Only a rehearsal shows how the planes behave together
// (admission against capacity, hold latency under contention, saga lag,
// goodput) and whether the rules that never break held: after the sale the
// inventory audit must find no double sale and the payment reconciliation no
// captured payment without exactly one paid booking or one refund.
//
// The fans are goroutines of this process. They speak only the public
// contract (sessions, queue, queue socket, browse, holds, checkout, bookings)
// and the payment sandbox's own API, as a fan's browser would. Everything is
// bounded: the number of fans, their arrival window, the requests in flight
// and a hard deadline (the sale's duration plus a drain), after which the run
// stops by itself. It refuses any address outside the loopback range, and it
// spreads the fans over many loopback source addresses (a few fans each) so
// that the stack's per-address limits, meant for one household behind one
// address, do not turn the rehearsal into a measurement of its own limits.
//
// The files hold one concern each: config.go (flags and defaults), net.go
// (loopback checks and source addresses), edge.go (HTTP calls and their
// outcomes), queue.go (the waiting room), fan.go (one fan's sale), pay.go
// (checkout, cards and 3-D Secure), monitor.go (sampling the stack over
// time), stats.go (percentiles and timelines), kendall.go (fairness),
// summary.go (summary.json), plots.go (PNG plots), report.go (report.html),
// books.go (the audit and the reconciliation), event.go (a fresh metered
// event through the organiser API), progress.go (the progress bar),
// limits_*.go (the open-file limit) and run.go (the whole rehearsal).
package rehearsal

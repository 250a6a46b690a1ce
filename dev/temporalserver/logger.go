package temporalserver

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"

	sdklog "go.temporal.io/sdk/log"
	serverlog "go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
)

// defaultLogger is used when Config.Logger is nil: text to stderr, warn and above.
func defaultLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// warnHandler drops records below warn level whatever the wrapped handler
// would accept, so an info-level application logger stays quiet for Temporal.
type warnHandler struct{ slog.Handler }

func (h warnHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return level >= slog.LevelWarn && h.Handler.Enabled(ctx, level)
}

func (h warnHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return warnHandler{h.Handler.WithAttrs(attrs)}
}

func (h warnHandler) WithGroup(name string) slog.Handler {
	return warnHandler{h.Handler.WithGroup(name)}
}

// warnOnly wraps l so that only warn-level records and above get through.
func warnOnly(l *slog.Logger) *slog.Logger {
	if _, ok := l.Handler().(warnHandler); ok {
		return l
	}
	return slog.New(warnHandler{l.Handler()})
}

// sdkLogger adapts a slog logger for Temporal SDK clients made by this package.
func sdkLogger(l *slog.Logger) sdklog.Logger {
	return sdklog.NewStructuredLogger(warnOnly(l))
}

// slogServerLogger adapts *slog.Logger to the Temporal server's log.Logger
// interface. Debug and Info are dropped before any tag is converted: the
// server logs a great deal at info level.
type slogServerLogger struct {
	l *slog.Logger
	// with are the tags of With calls, converted only when a record is
	// logged. The server derives a logger with tags for every request and
	// task but logs almost none of them at warn level: converting the tags
	// (and letting slog pre-format them) in With cost 1-3% of the process's
	// CPU in a profile of bookings against encore dev.
	with []tag.Tag
	// stopping is set by Server.Stop: from then on the expected shutdown
	// warnings (polls cut off, peers refusing connections) are dropped and
	// only errors get through.
	stopping *atomic.Bool
}

var (
	_ serverlog.Logger     = slogServerLogger{}
	_ serverlog.WithLogger = slogServerLogger{}
)

func newServerLogger(l *slog.Logger, stopping *atomic.Bool) serverlog.Logger {
	return slogServerLogger{l: warnOnly(l).With("component", "temporal"), stopping: stopping}
}

func (s slogServerLogger) Debug(string, ...tag.Tag) {}
func (s slogServerLogger) Info(string, ...tag.Tag)  {}

func (s slogServerLogger) Warn(msg string, tags ...tag.Tag) {
	if s.stopping.Load() {
		return
	}
	s.log(slog.LevelWarn, msg, tags)
}

func (s slogServerLogger) Error(msg string, tags ...tag.Tag) {
	s.log(slog.LevelError, msg, tags)
}

func (s slogServerLogger) DPanic(msg string, tags ...tag.Tag) {
	s.log(slog.LevelError, msg, tags)
}

// Panic logs and panics, as the server's own loggers do.
func (s slogServerLogger) Panic(msg string, tags ...tag.Tag) {
	s.log(slog.LevelError, msg, tags)
	panic(msg)
}

// Fatal logs and exits, as the server's own loggers do. The server uses it
// only for unrecoverable states (for example a lost shard ownership invariant).
// It also writes to stderr: Logger may buffer (a test's t.Log is lost when
// the process exits).
func (s slogServerLogger) Fatal(msg string, tags ...tag.Tag) {
	s.log(slog.LevelError+4, msg, tags)
	fmt.Fprintln(os.Stderr, append([]any{"temporalserver: fatal server error, exiting:", msg}, tagsToArgs(s.with, tags)...)...)
	os.Exit(1)
}

func (s slogServerLogger) With(tags ...tag.Tag) serverlog.Logger {
	if len(tags) == 0 {
		return s
	}
	// A new slice each time: loggers derived from s must not share appends.
	with := make([]tag.Tag, 0, len(s.with)+len(tags))
	with = append(append(with, s.with...), tags...)
	return slogServerLogger{l: s.l, with: with, stopping: s.stopping}
}

func (s slogServerLogger) log(level slog.Level, msg string, tags []tag.Tag) {
	ctx := context.Background()
	if !s.l.Enabled(ctx, level) {
		return
	}
	s.l.Log(ctx, level, msg, tagsToArgs(s.with, tags)...)
}

func tagsToArgs(lists ...[]tag.Tag) []any {
	var args []any
	for _, tags := range lists {
		for _, t := range tags {
			if t == nil {
				continue
			}
			v := t.Value()
			if err, ok := v.(error); ok && err != nil {
				v = err.Error()
			}
			args = append(args, slog.Any(t.Key(), v))
		}
	}
	return args
}

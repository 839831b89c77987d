package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/lmittmann/tint"
	"github.com/mattn/go-isatty"
	"github.com/redis/go-redis/v9"
)

// newLogger writes to stderr: colored text through tint on a terminal, JSON
// otherwise (a CronJob's log collector wants one object per line). go-redis's
// own messages, which it would print as plain lines of its own, go through
// the same logger when it writes to a file.
func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log.level: %w", err)
	}
	if format == "auto" {
		format = "json"
		if isTerminal(w) {
			format = "text"
		}
	}
	var logger *slog.Logger
	switch format {
	case "text":
		var h slog.Handler = tint.NewTextHandler(w, &tint.Options{Level: lvl, TimeFormat: time.TimeOnly, NoColor: !isTerminal(w)})
		if lvl > slog.LevelDebug {
			// A person reads these: a line per owner, not per holding.
			h = newReleaseTally(h)
		}
		logger = slog.New(h)
	case "json":
		logger = slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: lvl, ReplaceAttr: durationSeconds}))
	default:
		return nil, fmt.Errorf("log.format must be auto, text or json, got %q", format)
	}
	if writesToFile(w) {
		redis.SetLogger(&redisLogger{log: logger})
	}
	return logger, nil
}

// writesToFile says the logs go to a file, the process's stderr. go-redis
// has one logger per process, which its background dials also write to:
// only such a command takes it, not one logging into a buffer (a test),
// which would then receive other commands' messages while it reads.
func writesToFile(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && f.Fd() != ^uintptr(0)
}

// durationSeconds writes a duration as a number of seconds with millisecond
// precision, as the JSON report does, instead of slog's nanoseconds, under a
// name that says the unit (heartbeat_age_seconds): a log query reads the
// field without knowing which program wrote it. Every duration attribute of
// every package passes here, so none is left with a bare name.
func durationSeconds(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		key := a.Key
		if !strings.HasSuffix(key, "_seconds") {
			key += "_seconds"
		}
		return slog.Float64(key, math.Round(a.Value.Duration().Seconds()*1000)/1000)
	}
	return a
}

// redisLogger is go-redis's logger (redis.SetLogger, process-wide): its
// printf-style messages become one record each. It logs them as warnings:
// they are connection trouble that the pass reports as an error of its own
// when it matters. go-redis retries a command and says so at each dial that
// fails: a message the same as the last one, within redisRepeatWindow, is
// logged at debug level only, so that an unreachable Redis reads as one
// warning and not one per retry.
type redisLogger struct {
	log *slog.Logger
	now func() time.Time // time.Now; a test's clock

	mu   sync.Mutex
	last string
	at   time.Time
}

// redisRepeatWindow is how long the same go-redis message is not repeated
// as a warning: longer than a command's retries, shorter than the daemon's
// passes, so a lasting outage still shows once per pass or so.
const redisRepeatWindow = time.Minute

// Printf logs one go-redis message under a fixed text, the message itself in
// an attribute.
func (l *redisLogger) Printf(ctx context.Context, format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	now := time.Now
	if l.now != nil {
		now = l.now
	}
	t := now()
	l.mu.Lock()
	repeat := msg == l.last && t.Sub(l.at) < redisRepeatWindow
	if !repeat {
		l.last, l.at = msg, t
	}
	l.mu.Unlock()
	level := slog.LevelWarn
	if repeat {
		level = slog.LevelDebug
	}
	l.log.LogAttrs(ctx, level, "redis client", slog.String("detail", msg))
}

// isTerminal looks through writers that wrap a file and name its descriptor
// (the progress line's wrapper of stderr does).
func isTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// configFailure reports a configuration error of command: under log format
// json one JSON record, as every other line a CronJob's log collector reads
// from the reaper, else one plain line.
func configFailure(w io.Writer, format, command string, err error) {
	if format != "json" {
		fmt.Fprintf(w, "%s: configuration: %v\n", command, err)
		return
	}
	slog.New(slog.NewJSONHandler(w, nil)).LogAttrs(context.Background(), slog.LevelError, "configuration error",
		slog.String("command", command), slog.String("error", err.Error()))
}

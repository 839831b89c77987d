package kubeevents

import (
	"context"
	"log/slog"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/lock-reaper/lock-reaper/heartbeat/kube"
	"github.com/lock-reaper/lock-reaper/reaper"
)

// Sink writes one Event; *kube.EventSink is one.
type Sink interface {
	Create(ctx context.Context, e kube.Event) error
}

// DefaultTimeout bounds the writes of one pass's Events when Recorder's
// Timeout is zero.
const DefaultTimeout = 5 * time.Second

// Recorder writes each pass's Events (Of) through Sink. Events are best
// effort: a refused or failed write is logged and counted, and never
// changes the pass's result.
type Recorder struct {
	Sink Sink
	// Namespace is the namespace of the worker pods the passes list.
	Namespace string
	// Self is the reaper's own pod (the downward API's POD_NAME,
	// POD_NAMESPACE, POD_UID); Name empty when unknown.
	Self kube.PodRef
	// Timeout bounds the writes of one pass's Events, all of them; zero
	// means DefaultTimeout.
	Timeout time.Duration
	Logger  *slog.Logger
}

// Record writes the Events of the pass rep reports and returns how many
// could not be written. It waits for them, within Timeout, even when ctx is
// already cancelled (a pass cut short by SIGTERM): a one-shot pass that
// exits after it has then said what it did. A nil Recorder writes nothing.
func (r *Recorder) Record(ctx context.Context, rep *reaper.Report) (failed int) {
	if r == nil || r.Sink == nil {
		return 0
	}
	events := Of(rep, r.Namespace, r.Self)
	if len(events) == 0 {
		return 0
	}
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	var first error
	for _, e := range events {
		if ctx.Err() != nil {
			failed++
			continue
		}
		if err := r.Sink.Create(ctx, e); err != nil {
			failed++
			if first == nil {
				first = err
			}
		}
	}
	if first == nil && ctx.Err() != nil {
		first = ctx.Err()
	}
	r.log(failed, len(events), first)
	return failed
}

func (r *Recorder) log(failed, total int, err error) {
	logger := r.Logger
	if logger == nil {
		return
	}
	if failed == 0 {
		logger.Debug("kubernetes events recorded", slog.Int("events", total))
		return
	}
	attrs := []any{slog.Int("failed", failed), slog.Int("events", total), slog.String("error", err.Error())}
	if apierrors.IsForbidden(err) {
		attrs = append(attrs, slog.String("hint", "grant create and patch on events in the namespaces of the worker pods and of the reaper's pod"))
	}
	logger.Warn("kubernetes events not recorded; the pass is unaffected", attrs...)
}

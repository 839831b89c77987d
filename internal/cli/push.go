package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus/push"

	"github.com/lock-reaper/lock-reaper/internal/config"
	"github.com/lock-reaper/lock-reaper/internal/metrics"
	"github.com/lock-reaper/lock-reaper/reaper"
)

// pushJob is the Pushgateway job the metrics of one-shot passes are grouped
// under.
const pushJob = "lock_reaper"

// pushTimeout bounds a push, so an unreachable Pushgateway cannot hold a
// CronJob's pod past its deadline.
const pushTimeout = 10 * time.Second

// pushPass pushes a real pass's metrics when pushgateway_url is set. A
// failed push is logged and leaves the exit code alone: the pass did its
// work, and the alert on the age of the last success notices missing pushes.
// Dry runs push nothing: their counts describe what did not happen.
// blocked is the status page's view of the pass (blockedView), nil when
// unknown.
func pushPass(ctx context.Context, s *setup, version string, rep *reaper.Report, blocked *passBlocked) {
	if s.cfg.PushgatewayURL == "" || rep.Mode != reaper.ModeOnce {
		return
	}
	failures := s.eventFailures
	eventFailures := func(m *metrics.Metrics) { m.KubernetesEventFailures(failures) }
	if err := pushMetrics(ctx, s.cfg.PushgatewayURL, s.cfg.PushgatewayGrouping, version, rep, blocked, eventFailures); err != nil {
		s.log.Error("metrics push failed", slog.String("error", err.Error()))
		return
	}
	s.log.Debug("metrics pushed", slog.String("job", pushJob))
}

// pushMetrics sends one pass's metrics to the Pushgateway at rawURL with add
// semantics (POST), which replaces only the metric families this push
// carries, in the group of job lock_reaper and the labels of grouping
// (pushgateway_grouping), which the Pushgateway adds to every series. The time of the last success is carried only by a pass that
// completed, so a failed pass leaves the one an earlier run pushed in place.
// blocked is the status page's view of the pass, nil when unknown; observe
// adds what the command counted beside the report (the Events it could not
// write).
func pushMetrics(ctx context.Context, rawURL, grouping, version string, rep *reaper.Report, blocked *passBlocked, observe ...func(*metrics.Metrics)) error {
	labels, err := config.ParsePushGrouping(grouping)
	if err != nil {
		return fmt.Errorf("pushgateway_grouping: %w", err)
	}
	m := metrics.New(version)
	m.Observe(rep)
	blocked.observe(m)
	for _, o := range observe {
		o(m)
	}
	reg, err := metrics.NewPassRegistry(m)
	if err != nil {
		return fmt.Errorf("register metrics: %w", err)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		// config validated the URL; say nothing more, it may hold a password.
		return errors.New("parse pushgateway_url")
	}
	// Credentials go in a header rather than the URL, and the query string
	// is put back on each request by the client, so that the push package's
	// errors, which quote the URL, carry neither a password nor a query
	// value (a token, say). The push package appends the grouping path to
	// the URL it is given as a string: given the query, it would append the
	// path after it.
	user, query := u.User, u.RawQuery
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	client := &http.Client{Timeout: pushTimeout, Transport: withQuery{query: query, next: http.DefaultTransport}}
	pusher := push.New(u.String(), pushJob).Gatherer(reg).Client(client)
	for name, value := range labels {
		pusher = pusher.Grouping(name, value)
	}
	if user != nil {
		password, _ := user.Password()
		pusher = pusher.BasicAuth(user.Username(), password)
	}
	// A pass cut short by SIGTERM still has a result worth pushing.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pushTimeout)
	defer cancel()
	if err := pusher.AddContext(ctx); err != nil {
		return fmt.Errorf("push metrics: %w", err)
	}
	return nil
}

// withQuery sends every request with the push URL's query string. The
// request handed back in errors is the caller's, which has none.
type withQuery struct {
	query string
	next  http.RoundTripper
}

func (q withQuery) RoundTrip(req *http.Request) (*http.Response, error) {
	if q.query == "" {
		return q.next.RoundTrip(req)
	}
	r := req.Clone(req.Context())
	r.URL.RawQuery = q.query
	return q.next.RoundTrip(r)
}

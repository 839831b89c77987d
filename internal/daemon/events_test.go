package daemon

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/heartbeat/kube"
	"github.com/lock-reaper/lock-reaper/internal/kubeevents"
	"github.com/lock-reaper/lock-reaper/internal/metrics"
	"github.com/lock-reaper/lock-reaper/internal/testing/kubeapi"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// TestDaemonRecordsEvents: each pass's Events are written once the pass is
// over; the ones the API server refuses are counted in
// lock_reaper_kubernetes_event_failures_total, and the pass succeeds
// regardless.
func TestDaemonRecordsEvents(t *testing.T) {
	t.Parallel()
	api := kubeapi.New(t)
	sink, err := kube.NewEventSink(api.Config(), "lock-reaper-0")
	require.NoError(t, err)
	rec := &kubeevents.Recorder{Sink: sink, Namespace: "pulp", Self: kube.PodRef{Namespace: "pulp", Name: "lock-reaper-0"}}
	runner := newGatedRunner(runnerFunc(func(context.Context, reaper.Options) (*reaper.Report, error) {
		pod := reaper.PodEvidenceOf(&heartbeat.PodEvidence{Rule: heartbeat.PodContainerEnded, Pod: heartbeat.Pod{Name: "example-worker-1", UID: "u-1"}})
		f := reaper.Finding{Judgement: &judge.Judgement{Holding: judge.Holding{Owner: "1@example-worker-1", Kind: judge.KindTask},
			Verdict: judge.VerdictOwnerDead}, Result: reaper.ResultReleased}
		return &reaper.Report{Mode: reaper.ModeOnce, LockOwners: []reaper.OwnerReport{{Name: "1@example-worker-1", Kubernetes: pod}},
			Findings: []reaper.Finding{f, f}}, nil
	}))
	_, b := start(t, context.Background(), runner, Config{Schedule: "@every 1h", Events: rec.Record})

	runner.let(t)
	res := b.waitPass(t)
	require.Equal(t, metrics.OutcomeSuccess, res.Outcome)
	events := api.Events()
	require.Len(t, events, 1)
	require.Equal(t, "example-worker-1", events[0].Regarding.Name)
	require.Equal(t, "lock-reaper released 2 locks held by 1@example-worker-1 (2 task locks)", events[0].Note)
	require.Zero(t, b.scrape(t)[metrics.NameKubernetesEventFailures])
}

// TestDaemonCountsRefusedEvents: a Role without create on events.
func TestDaemonCountsRefusedEvents(t *testing.T) {
	t.Parallel()
	api := kubeapi.New(t)
	api.FailEvents(http.StatusForbidden)
	sink, err := kube.NewEventSink(api.Config(), "lock-reaper-0")
	require.NoError(t, err)
	rec := &kubeevents.Recorder{Sink: sink, Namespace: "pulp", Self: kube.PodRef{Namespace: "pulp", Name: "lock-reaper-0"}}
	hold := &reaper.Report{Mode: reaper.ModeOnce, Guards: []reaper.Guard{{Name: judge.GuardMassDeath, Reason: "3 of 4 worker rows are dead: ..."}}}
	runner := newGatedRunner(runnerFunc(func(context.Context, reaper.Options) (*reaper.Report, error) { return hold, nil }))
	_, b := start(t, context.Background(), runner, Config{Schedule: "@every 1h", Events: rec.Record})
	runner.let(t)
	res := b.waitPass(t)
	require.Equal(t, metrics.OutcomeGuarded, res.Outcome, "the pass is the guard's, not the Events'")
	require.Empty(t, api.Events())
	require.Equal(t, 1.0, b.scrape(t)[metrics.NameKubernetesEventFailures])
}

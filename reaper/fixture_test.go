package reaper_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// fixture is passtest's real Redis and PostgreSQL with the helpers of the
// pass's own tests: a reaper on them, a pass, suspects aged.
type fixture struct {
	*passtest.Fixture
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return &fixture{passtest.New(t)}
}

func (f *fixture) reaper(mutate func(*reaper.Config)) *reaper.Reaper {
	f.T.Helper()
	r, err := reaper.New(f.config(mutate), f.Redis.Client, f.DB.Pool, passtest.Logger())
	require.NoError(f.T, err)
	return r
}

// config is the tests' configuration of a reaper, as mutate changes it.
func (f *fixture) config(mutate func(*reaper.Config)) reaper.Config {
	cfg := reaper.DefaultConfig()
	cfg.HeartbeatRecheck = testenv.HeartbeatRecheck
	cfg.BatchSize = 7 // several batches even in small tests
	if mutate != nil {
		mutate(&cfg)
	}
	return cfg
}

func (f *fixture) pass(r *reaper.Reaper, mode string) *reaper.Report {
	f.T.Helper()
	rep, err := r.RunOnce(f.Ctx, reaper.Options{Mode: mode})
	require.NoError(f.T, err)
	return rep
}

// ageSuspects moves every remembered suspect's first sighting back, as if
// confirm_after had passed.
func (f *fixture) ageSuspects(by time.Duration) {
	f.T.Helper()
	s, err := redislocks.ReadSuspects(f.Ctx, f.Redis.Client, time.Second)
	require.NoError(f.T, err)
	for k, v := range s {
		v.FirstSeen = v.FirstSeen.Add(-by)
		s[k] = v
	}
	require.NoError(f.T, redislocks.WriteSuspects(f.Ctx, f.Redis.Client, time.Second, time.Hour, s))
}

func findingFor(rep *reaper.Report, key, owner string) *reaper.Finding {
	for i := range rep.Findings {
		if rep.Findings[i].Key == key && rep.Findings[i].Owner == owner {
			return &rep.Findings[i]
		}
	}
	return nil
}

func taskFindingFor(rep *reaper.Report, id string) *reaper.TaskFinding {
	for i := range rep.Tasks {
		if rep.Tasks[i].ID == id {
			return &rep.Tasks[i]
		}
	}
	return nil
}

// passConfig is the default configuration with the tests' heartbeat_recheck.
func passConfig() reaper.Config {
	cfg := reaper.DefaultConfig()
	cfg.HeartbeatRecheck = testenv.HeartbeatRecheck
	return cfg
}

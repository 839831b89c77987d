package status

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/doctor"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/history"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/pulpdb"
)

// slowSource holds the view's waiting-task read until released, as a slow
// database would.
type slowSource struct{ release chan struct{} }

func (slowSource) Policy() judge.Policy { return reaper.DefaultConfig().Policy }
func (s slowSource) WaitingTasks(ctx context.Context, _ int) ([]pulpdb.TaskRow, int, error) {
	<-s.release
	return nil, 0, nil
}
func (slowSource) ExplainedTask(context.Context, string) (*pulpdb.ExplainedTask, error) {
	return nil, nil
}
func (slowSource) TaskStarts(context.Context, []string) (map[string]time.Time, bool, error) {
	return nil, true, nil
}
func (slowSource) RecentPasses(context.Context, time.Time, int) (history.Passes, error) {
	return history.Passes{}, nil
}
func (slowSource) Inspect(context.Context, reaper.InspectOptions) (*reaper.Inspection, error) {
	return nil, errors.New("no inspection here")
}

// TestPassDoneNeverWaitsForABuild: while a view is being built (its read
// held up), PassDone returns at once, and the newest pass is the one built
// next; a pass in between may never be built, but is in the history.
func TestPassDoneNeverWaitsForABuild(t *testing.T) {
	src := slowSource{release: make(chan struct{})}
	s := New(src, Options{})
	at := func(n int) (*judge.Snapshot, *reaper.Report) {
		now := time.Date(2026, 7, 24, 12, n, 0, 0, time.UTC)
		return &judge.Snapshot{Now: now}, &reaper.Report{Mode: reaper.ModeOnce, StartedAt: now}
	}
	for n := range 3 {
		snap, rep := at(n)
		s.PassDone(snap, rep, time.Time{}) // the first is held in its read; none may block
	}
	close(src.release)
	s.Wait()
	v := s.View()
	require.NotNil(t, v)
	require.Equal(t, 2, v.Now().Minute(), "the newest pass wins")
}

// TestDoctorDoneShowsOnTheViewAtOnce: doctor's results reach the published
// view when they come, not with the next view, which `status --every 1h`
// builds an hour later; and a view built after them keeps them.
func TestDoctorDoneShowsOnTheViewAtOnce(t *testing.T) {
	f := newFixture(t, sim.SmallIncident())
	before := f.inspect()
	require.Nil(t, before.Doctor)
	f.srv.DoctorDone(doctor.Report{Status: doctor.Warn})
	v := f.srv.View()
	require.NotNil(t, v.Doctor)
	require.Equal(t, doctor.Warn, v.Doctor.Status)
	require.Same(t, before.In, v.In, "the same view, with doctor's results")
	_, body := f.get("/")
	require.Contains(t, body, "Overall: <strong>warn</strong>")
	require.NotNil(t, f.inspect().Doctor, "the next view keeps them")
}

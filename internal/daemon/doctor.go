package daemon

import (
	"context"
	"log/slog"

	"github.com/lock-reaper/lock-reaper/internal/doctor"
	"github.com/lock-reaper/lock-reaper/reaper"
)

// startDoctor runs Config.Doctor once, after the first pass, on that pass's
// inspection when the status page keeps it, and returns a channel closed
// when it is done; the next pass waits for it (awaitDoctor). Beside a pass,
// or reading a snapshot of its own beside the page's, it would double what
// the daemon holds at its peak, which a memory limit sized for one pass
// does not allow. Each check that is not ok is logged once
// (warn at warn level, fail at error level) and every check's status goes
// to lock_reaper_doctor_check_status. Its findings never make the daemon
// unready: they describe the deployment, not an outage, and a pass still
// does its work under them.
func (d *Daemon) startDoctor(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	if d.cfg.Doctor == nil {
		close(done)
		return done
	}
	var in *reaper.Inspection
	if d.cfg.Pages != nil {
		in = d.cfg.Pages.Inspection()
	}
	go func() {
		defer close(done)
		rep := d.cfg.Doctor(ctx, in)
		if ctx.Err() != nil {
			return // stopped before it finished: what it saw is cut short
		}
		if d.cfg.Pages != nil {
			d.cfg.Pages.DoctorDone(rep)
		}
		for _, c := range rep.Checks {
			if c.Status == doctor.Skipped {
				// Not run: no value says "ok" for it, and the check that
				// failed is logged.
				continue
			}
			d.metrics.DoctorCheck(c.Check, c.Status.Level())
			level := slog.LevelWarn
			switch c.Status {
			case doctor.OK:
				continue
			case doctor.Fail:
				level = slog.LevelError
			}
			d.log.Log(ctx, level, "doctor check", slog.String("check", c.Check), slog.String("status", string(c.Status)),
				slog.String("evidence", c.Evidence), slog.String("fix", c.Fix))
		}
		d.log.Info("doctor finished", slog.Int("ok", rep.Counts[doctor.OK]), slog.Int("warnings", rep.Counts[doctor.Warn]),
			slog.Int("failures", rep.Counts[doctor.Fail]), slog.Int("skipped", rep.Counts[doctor.Skipped]))
	}()
	return done
}

// awaitDoctor waits for the doctor started after the first pass, if it is
// still running; false once ctx is cancelled.
func (d *Daemon) awaitDoctor(ctx context.Context) bool {
	if d.doctorDone == nil {
		return true
	}
	select {
	case <-d.doctorDone:
		return true
	case <-ctx.Done():
		return false
	}
}

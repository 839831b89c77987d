package judge

import (
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
)

// The policy the judge's tests run under: the defaults of verdicts.md,
// which reaper.DefaultConfig gives the program.
const (
	jtHeartbeatGrace  = 30 * time.Second
	jtFinishedGrace   = 60 * time.Second
	jtConfirmAfter    = 2 * time.Minute
	jtHungWorkerGrace = 10 * time.Minute
	jtClockSkew       = 2 * time.Second
)

func jtPolicy() Policy {
	return Policy{
		HeartbeatGrace:  jtHeartbeatGrace,
		FinishedGrace:   jtFinishedGrace,
		ConfirmAfter:    jtConfirmAfter,
		LostRunning:     StateCanceled,
		OrphanedWaiting: WaitingRequeue,
		MaxDeadFraction: 0.5,
		MinWorkers:      3,
		MaxReleases:     10000,
		MaxTaskUpdates:  1000,
		Kubernetes:      heartbeat.PodPolicy{HungWorkerGrace: jtHungWorkerGrace, ClockSkew: jtClockSkew},
	}
}

package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/lock-reaper/lock-reaper/reaper"
)

// Names of the metrics of the passes' own load on Redis (reaper.RedisLoad).
const (
	NameRedisCommands    = "lock_reaper_redis_commands_total"
	NameRedisRoundTrips  = "lock_reaper_redis_round_trips_total"
	NameRedisKeysScanned = "lock_reaper_redis_keys_scanned_total"
	NameRedisWait        = "lock_reaper_redis_wait_seconds_total"
)

// Values of lock_reaper_redis_commands_total's kind label.
const (
	commandScan  = "scan"
	commandOther = "other"
)

// redisLoadMetrics count what every pass, failed ones included, asked of
// Redis: counters, so that increase() over a pass's interval, divided by
// lock_reaper_passes_total's, is the load of one pass.
type redisLoadMetrics struct {
	commands    *prometheus.CounterVec
	roundTrips  prometheus.Counter
	keysScanned prometheus.Counter
	wait        prometheus.Counter
}

func newRedisLoadMetrics() *redisLoadMetrics {
	l := &redisLoadMetrics{
		commands: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "redis_commands_total",
			Help: "Redis commands the passes sent, by kind: scan (the keyspace walk's SCAN calls) or other (each command of a pipeline one).",
		}, []string{"kind"}),
		roundTrips: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "redis_round_trips_total",
			Help: "Round trips the passes made to Redis: one per command sent alone, one per pipeline.",
		}),
		keysScanned: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "redis_keys_scanned_total",
			Help: "Keys the passes' SCAN calls returned.",
		}),
		wait: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "redis_wait_seconds_total",
			Help: "Time the passes' Redis calls waited on their replies, summed over calls (overlapping calls each count).",
		}),
	}
	for _, k := range []string{commandScan, commandOther} {
		l.commands.WithLabelValues(k)
	}
	return l
}

func (l *redisLoadMetrics) observe(rep *reaper.Report) {
	r := rep.RedisLoad
	l.commands.WithLabelValues(commandScan).Add(float64(r.ScanCalls))
	l.commands.WithLabelValues(commandOther).Add(float64(r.Commands))
	l.roundTrips.Add(float64(r.RoundTrips))
	l.keysScanned.Add(float64(r.KeysScanned))
	l.wait.Add(r.WaitSeconds)
}

func (l *redisLoadMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{l.commands, l.roundTrips, l.keysScanned, l.wait}
}

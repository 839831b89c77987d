package heartbeat

import "time"

// When a pass must run: the moments at which a row's liveness by its
// heartbeat changes the verdicts. The daemon reads the rows every few
// seconds and starts a pass as soon as one of them crosses; these are pure
// functions of the rows and the database's clock.

// DeathAt is the moment the row becomes dead by its heartbeat: its last
// heartbeat + ttl + grace, the contract's earliest release of its locks.
func (r AppStatus) DeathAt(grace time.Duration) time.Time {
	return r.LastHeartbeat.Add(r.TTL + grace)
}

// DiedBetween says some row became dead by its heartbeat after since and no
// later than now (both the database's clock): a pass that judged at since
// saw it late or alive, and a pass now sees it dead. A zero since (no pass
// yet) says nothing is due.
func DiedBetween(rows []AppStatus, grace time.Duration, since, now time.Time) bool {
	if since.IsZero() {
		return false
	}
	for _, r := range rows {
		if at := r.DeathAt(grace); at.After(since) && !at.After(now) {
			return true
		}
	}
	return false
}

// WentStaleBetween says some row the pod rules judge (a worker's or an API
// process's, named {pid}@{hostname}) was within its ttl at since and is
// past it at now (both the database's clock): from that moment the absence
// of its pod from a list proves its death (pod-gone), and a pass that judged
// at since could not have applied it. As DiedBetween, on the rows just read
// (a row that beat again has not gone stale), and a zero since says nothing.
func WentStaleBetween(rows []AppStatus, since, now time.Time) bool {
	if since.IsZero() {
		return false
	}
	for _, r := range rows {
		if _, _, ok := podOwner(r); !ok {
			continue
		}
		if at := r.LastHeartbeat.Add(r.TTL); !at.Before(since) && at.Before(now) {
			return true
		}
	}
	return false
}

// NextDeath is the earliest moment after now at which a row becomes dead by
// its heartbeat if it does not heartbeat again; zero when every row is dead.
func NextDeath(rows []AppStatus, grace time.Duration, now time.Time) time.Time {
	var next time.Time
	for _, r := range rows {
		if at := r.DeathAt(grace); at.After(now) && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	return next
}

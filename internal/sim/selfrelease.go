package sim

import "time"

// The fleet itself sometimes releases holdings of an owner other than the
// releasing process (an API canceling a waiting task, a restart's cleanup).
// Those releases are remembered here, so that the owner's safety check
// (safety.go) does not blame a reaper for them; an API's are also listed for
// tests (SelfReleases).

// holdingRef names one holding: an owner's hold on a lock key.
type holdingRef struct{ owner, key string }

// selfRelease is what the fleet knows of its own releases of one holding.
type selfRelease struct {
	inFlight int       // releases under way
	last     time.Time // when the last one finished
}

// noteSelfRelease marks owner's holdings of keys as being released by the
// fleet itself; call the returned function once the release is done. While it
// runs, and afterwards, a check that finds one of them gone is excused: the
// check cannot tell whether it ran before or after the release.
func (f *Fleet) noteSelfRelease(owner string, keys []string) (done func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, k := range keys {
		r := f.selfReleased[holdingRef{owner, k}]
		r.inFlight++
		f.selfReleased[holdingRef{owner, k}] = r
	}
	return func() {
		now := time.Now()
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, k := range keys {
			r := f.selfReleased[holdingRef{owner, k}]
			r.inFlight--
			r.last = now
			f.selfReleased[holdingRef{owner, k}] = r
		}
	}
}

// selfReleasedSince reports whether the fleet itself released owner's holding
// of key at or after since, or is releasing it now.
func (f *Fleet) selfReleasedSince(owner, key string, since time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.selfReleased[holdingRef{owner, key}]
	return ok && (r.inFlight > 0 || !r.last.Before(since))
}

// SelfRelease is one release the fleet itself made of holdings of some
// owner on its behalf, outside that owner's own protocol steps: an API
// process canceling a waiting, unclaimed task releases the task's locks under
// whatever owner its task key names (Cancel, also the dispatcher's random
// cancels). A lock a fault leaked can go that way rather than by a reaper.
// A restart's cleanup (Config.RestartReleasesOwnLocks) is not listed.
type SelfRelease struct {
	// By is the owner name of the process that released.
	By string
	// Owner is the owner whose holdings were released.
	Owner string
	Task  string
	// Keys are the lock keys the release actually took from Owner; keys
	// Owner no longer held are not listed.
	Keys []string
	At   time.Time
}

// SelfReleases returns every release the fleet itself made of another
// owner's holdings so far, in order; releases that took nothing are left out.
func (f *Fleet) SelfReleases() []SelfRelease {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]SelfRelease(nil), f.selfReleases...)
}

func (f *Fleet) recordSelfRelease(by, owner, task string, keys []string) {
	if len(keys) == 0 {
		return
	}
	f.mu.Lock()
	f.selfReleases = append(f.selfReleases, SelfRelease{By: by, Owner: owner, Task: task, Keys: keys, At: time.Now()})
	f.mu.Unlock()
	f.log.Info("released another owner's locks", "by", by, "owner", owner, "task", task, "keys", keys)
}

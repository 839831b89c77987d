package judge

import "time"

// confirmed is the one confirmation predicate: a suspect first sighted at
// firstSeen is confirmed once it has persisted for ConfirmAfter by the
// database clock. A sighting not before now (a clock that went back) never is.
func confirmed(firstSeen, now time.Time, p Policy) bool {
	return firstSeen.Before(now) && now.Sub(firstSeen) >= p.ConfirmAfter
}

// confirm turns a finding that needs confirmation into a release once the
// same holding has carried the same verdict for ConfirmAfter, and remembers
// it otherwise.
func (j *judge) confirm(jd Judgement) Judgement {
	if !jd.Verdict.needsConfirmation() {
		return jd
	}
	s := remember(j.suspects, &j.snap, SuspectKey{Key: jd.Key, Owner: jd.Owner}, jd.Verdict)
	jd.FirstSeen = &s.FirstSeen
	jd.Action = ActionSuspect
	if confirmed(s.FirstSeen, j.snap.Now, j.p) {
		jd.Action = ActionRelease
	}
	return jd
}

// remember keeps in suspects the first sighting of a suspect with the same
// verdict in the snapshot's, and starts a new one otherwise.
func remember(suspects map[SuspectKey]Suspect, snap *Snapshot, key SuspectKey, v Verdict) Suspect {
	s, ok := snap.Suspects[key]
	if !ok || s.Verdict != v || s.FirstSeen.After(snap.Now) {
		s = Suspect{Verdict: v, FirstSeen: snap.Now}
	}
	suspects[key] = s
	return s
}

// carryUnobservedSuspects keeps suspects a registry-only pass could not see:
// only a full scan proves a legacy lock is gone. A suspect whose holding this
// pass did see, with whatever verdict, is settled by that sighting.
func (j *judge) carryUnobservedSuspects(plan *Plan) {
	if j.snap.FullScan || len(j.snap.Suspects) == 0 {
		return
	}
	observed := map[SuspectKey]bool{}
	for _, h := range j.snap.Holdings {
		k := SuspectKey{Key: h.Key, Owner: h.Owner}
		if _, remembered := j.snap.Suspects[k]; remembered {
			observed[k] = true
		}
	}
	for k, s := range j.snap.Suspects {
		if _, seen := plan.Suspects[k]; !seen && !observed[k] {
			plan.Suspects[k] = s
		}
	}
}

// StuckClaimKey is the suspect a stuck claim of task taskID by appLockID is
// remembered under; a pass forgets it once the claim is cleared. No lock key
// starts with "stuck-claim:", so it cannot collide with a holding.
func StuckClaimKey(taskID, appLockID string) SuspectKey {
	return SuspectKey{Key: "stuck-claim:" + taskID, Owner: appLockID}
}

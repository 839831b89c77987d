package heartbeat

import (
	"strings"
	"time"
)

// Kubernetes evidence of liveness: what one complete, successful list of
// pods says about the owners of core_appstatus rows. Pulp's owner names are
// {pid}@{hostname}; in Kubernetes the hostname is the pod's name, and
// pulpcore-worker runs as PID 1 of its container. The rules here are pure:
// the adapter that lists the pods builds a PodView, and WithPods applies it
// to a Fleet judged from the heartbeats. docs/verdicts.md has the rules and
// their reasons.

// PodRule names the rule that decided an owner's Kubernetes evidence.
type PodRule string

const (
	// PodSeen: the pod exists and changes nothing.
	PodSeen PodRule = "pod-seen"
	// PodGone: no pod of that name in a complete list, heartbeat past ttl:
	// dead now, without the heartbeat grace.
	PodGone PodRule = "pod-gone"
	// PodRestarted: the worker container started (or ended) after the row's
	// last heartbeat plus the clock-skew margin, heartbeat past ttl: the
	// process that wrote the row is dead now.
	PodRestarted PodRule = "container-restarted"
	// PodAliveNotHeartbeating: the worker container has run since before the
	// row was created, yet the heartbeat is past ttl + grace: held as late
	// until hung_worker_grace has passed too.
	PodAliveNotHeartbeating PodRule = "alive-not-heartbeating"
	// PodHungTooLong: alive by Kubernetes, but not heartbeating for longer
	// than ttl + grace + hung_worker_grace: the ordinary dead-owner rule applies.
	PodHungTooLong PodRule = "hung-too-long"
	// PodOutsideView: a fresh heartbeat and no pod: the owner lives outside
	// this view (another namespace or cluster). Reported only; while any such
	// owner exists the view is not trusted to be complete, so no owner is
	// judged PodGone in that pass.
	PodOutsideView PodRule = "outside-view"
	// PodNotInView: no pod, heartbeat past ttl, but the view is not trusted to
	// be complete (see PodOutsideView) or the name is ambiguous: no effect.
	PodNotInView PodRule = "not-in-view"
)

// Pod is what one pod of the list says, reduced to what the rules need.
type Pod struct {
	Name  string `json:"pod"`
	Phase string `json:"phase"`
	// Terminating: the pod has a deletion timestamp.
	Terminating bool `json:"terminating,omitempty"`
	// Container is the worker container's status; nil when the pod has no
	// such container or no status for it yet.
	Container *Container `json:"container,omitempty"`
}

// Container is the status of a pod's worker container.
type Container struct {
	Name    string `json:"name"`
	Running bool   `json:"running"`
	// StartedAt is when the current running incarnation started (node clock);
	// nil when not running.
	StartedAt *time.Time `json:"started_at,omitempty"`
	// FinishedAt is when the latest incarnation that ended did end (node
	// clock): the current state's if terminated, else the last state's.
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	Restarts   int32      `json:"restarts"`
}

// PodView is one complete, successful list of pods, by name. It belongs to
// one pass: a later pass lists again.
type PodView struct {
	pods map[string]Pod
}

// NewPodView indexes the pods of one complete list.
func NewPodView(pods []Pod) *PodView {
	v := &PodView{pods: make(map[string]Pod, len(pods))}
	for _, p := range pods {
		v.pods[p.Name] = p
	}
	return v
}

// Len is the number of pods in the view.
func (v *PodView) Len() int { return len(v.pods) }

// lookup finds the pod an owner name's hostname names. ambiguous says the
// hostname may be a truncated pod name (Kubernetes cuts hostnames at 63
// characters), so its absence proves nothing.
func (v *PodView) lookup(host string) (p Pod, found, ambiguous bool) {
	if p, ok := v.pods[host]; ok {
		return p, true, false
	}
	for name := range v.pods {
		if strings.HasPrefix(name, host) {
			return Pod{}, false, true
		}
	}
	return Pod{}, false, false
}

// PodRules are the settings of the Kubernetes rules.
type PodRules struct {
	// HungWorkerGrace is how long past ttl + grace a worker alive by
	// Kubernetes is kept before the ordinary dead-owner rule applies.
	HungWorkerGrace time.Duration
	// ClockSkew is the margin between the node's clock (container times) and
	// the worker's (heartbeats, pulp_created), so that clock differences
	// cannot fake a restart.
	ClockSkew time.Duration
}

// Defaults of PodRules.
const (
	DefaultHungWorkerGrace = 10 * time.Minute
	// DefaultClockSkew covers NTP-synchronised nodes with room to spare; a
	// worker's heartbeat and its container's start come from the same node's
	// clock unless the pod was recreated on another node.
	DefaultClockSkew = 2 * time.Second
)

// PodEvidence is what Kubernetes said about one owner, for reports.
type PodEvidence struct {
	Rule PodRule `json:"rule"`
	Pod
}

// splitOwner parses {pid}@{hostname}; ok is false for other names (such as
// immediate-<uuid>).
func splitOwner(name string) (pid, host string, ok bool) {
	pid, host, ok = strings.Cut(name, "@")
	return pid, host, ok && host != ""
}

// podAppType says whether rows of the app type run in the pods the selector
// covers (pulp-operator's worker and API pods).
func podAppType(appType string) bool { return appType == "worker" || appType == "api" }

// rowRule applies the rules to one row: the rule that decided and the row's
// liveness after it. trusted says the view may prove a pod's absence.
func rowRule(r AppStatus, live Liveness, now time.Time, grace time.Duration, v *PodView, rules PodRules, trusted bool) (PodRule, Pod, Liveness) {
	pid, host, ok := splitOwner(r.Name)
	if !ok || !podAppType(r.AppType) {
		return "", Pod{}, live
	}
	pod, found, ambiguous := v.lookup(host)
	switch {
	case !found && live == Alive:
		return PodOutsideView, Pod{Name: host}, live
	case !found && (ambiguous || !trusted):
		return PodNotInView, Pod{Name: host}, live
	case !found:
		return PodGone, Pod{Name: host}, Dead
	}
	if live == Alive {
		return PodSeen, pod, live
	}
	if endedAfter(pod.Container, r.LastHeartbeat.Add(rules.ClockSkew)) {
		return PodRestarted, pod, Dead
	}
	if live == Dead && pid == "1" && !r.PulpCreated.IsZero() && runningSince(pod, r.PulpCreated.Add(rules.ClockSkew)) {
		if now.Sub(r.LastHeartbeat) <= r.TTL+grace+rules.HungWorkerGrace {
			return PodAliveNotHeartbeating, pod, Late
		}
		return PodHungTooLong, pod, live
	}
	return PodSeen, pod, live
}

// endedAfter says the incarnation of the container that could have written a
// heartbeat at t has ended: the running one started after t, or none runs and
// the latest one ended after t.
func endedAfter(c *Container, t time.Time) bool {
	switch {
	case c == nil:
		return false
	case c.Running:
		return c.StartedAt != nil && c.StartedAt.After(t)
	default:
		return c.FinishedAt != nil && c.FinishedAt.After(t)
	}
}

// runningSince says the pod runs and its container has run without restart
// since at or before t.
func runningSince(p Pod, t time.Time) bool {
	c := p.Container
	return p.Phase == "Running" && c != nil && c.Running && c.StartedAt != nil && !c.StartedAt.After(t)
}

// viewTrusted says the view may prove that a pod is gone: at least one worker
// or API row is alive, and every such row's pod is in the view. A fresh
// heartbeat without a pod shows that the selector or namespace misses part of
// the fleet; a fleet with no fresh heartbeat at all is the signature of a
// database too slow to record them, not of pods gone.
func viewTrusted(rows map[string]AppStatus, now time.Time, grace time.Duration, v *PodView) bool {
	alive := 0
	for _, r := range rows {
		if !podAppType(r.AppType) || r.Liveness(now, grace) != Alive {
			continue
		}
		_, host, ok := splitOwner(r.Name)
		if !ok {
			continue
		}
		if _, found := v.pods[host]; !found {
			return false
		}
		alive++
	}
	return alive > 0
}

// WithPods applies the Kubernetes rules of one pass's pod list to the fleet
// and returns it. A nil view (Kubernetes off or unreadable this pass) changes
// nothing, so the pass judges exactly as it would without Kubernetes.
func (f *Fleet) WithPods(v *PodView, rules PodRules) *Fleet {
	if f == nil || v == nil {
		return f
	}
	trusted := viewTrusted(f.rows, f.Now, f.Grace, v)
	f.podLiveness = map[string]Liveness{}
	type decided struct {
		live Liveness
		hb   time.Time
		id   string
		ev   *PodEvidence
	}
	byName := map[string]decided{}
	for _, r := range f.rows {
		base := r.Liveness(f.Now, f.Grace)
		rule, pod, live := rowRule(r, base, f.Now, f.Grace, v, rules, trusted)
		if live != base {
			f.podLiveness[r.ID] = live
		}
		if live == Dead && (rule == PodGone || rule == PodRestarted) {
			if f.podProven == nil {
				f.podProven = map[string]bool{}
			}
			f.podProven[r.ID] = true
		}
		d, seen := byName[r.Name]
		// The row that gives the name its liveness explains it; among equals,
		// the newest heartbeat, as the name's heartbeat age does.
		if seen && !explainsBetter(live, r.LastHeartbeat, r.ID, d.live, d.hb, d.id) {
			continue
		}
		d = decided{live: live, hb: r.LastHeartbeat, id: r.ID}
		if rule != "" {
			d.ev = &PodEvidence{Rule: rule, Pod: pod}
		}
		byName[r.Name] = d
	}
	f.heartbeatNames = make(map[string]Liveness, len(f.names))
	for name, o := range f.names {
		f.heartbeatNames[name] = o.Liveness
	}
	for name, d := range byName {
		o := f.names[name]
		o.Liveness, o.Kubernetes = d.live, d.ev
		f.names[name] = o
	}
	return f
}

// explainsBetter orders the rows of one name: better liveness, then newer
// heartbeat, then the smaller id, so that the choice never depends on map order.
func explainsBetter(live Liveness, hb time.Time, id string, thanLive Liveness, thanHB time.Time, thanID string) bool {
	switch {
	case live != thanLive:
		return live > thanLive
	case !hb.Equal(thanHB):
		return hb.After(thanHB)
	default:
		return id < thanID
	}
}

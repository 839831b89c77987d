package reaper

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// PodSource lists the pods whose names are owner hostnames: one complete list
// per pass, or an error. The kube package implements it with client-go.
type PodSource interface {
	// ListPods returns every pod the configured namespace and selector name,
	// all pages of one list, or an error; never a partial list.
	ListPods(ctx context.Context) ([]heartbeat.Pod, error)
	// Where names the namespace and selector, for reports and logs.
	Where() string
}

// ConfirmedPodSource is a PodSource that keeps its pods between passes (a
// watch's cache) and says when they were last known current: the list a
// cache was filled from, or the watch's latest event or bookmark. A plain
// PodSource's pods are as of the moment its list was sent.
type ConfirmedPodSource interface {
	PodSource
	ListPodsConfirmed(ctx context.Context) ([]heartbeat.Pod, time.Time, error)
}

// DirectPodSource is a PodSource whose ListPods may answer from a cache (a
// watch's), and that can also list through the API whatever its cache:
// the list that confirms a hold (confirmHolds). A plain PodSource's
// ListPods is such a list already.
type DirectPodSource interface {
	PodSource
	ListPodsDirect(ctx context.Context) ([]heartbeat.Pod, error)
}

// Results of a pass's Kubernetes read, KubernetesReport.Read.
const (
	KubernetesRead        = "ok"
	KubernetesUnavailable = "unavailable"
)

// KubernetesReport says what the pass learned from Kubernetes. It is absent
// when Kubernetes evidence is off.
type KubernetesReport struct {
	// Read is ok, or unavailable when the list failed: then the pass judged
	// exactly as it does without Kubernetes.
	Read  string `json:"read"`
	Error string `json:"error,omitempty"`
	// Where is the namespace and label selector listed.
	Where string `json:"where"`
	Pods  int    `json:"pods"`
	// OwnersByEvidence counts the AppStatus owner names by the Kubernetes
	// rule that decided their evidence ("none" for names it says nothing of).
	OwnersByEvidence map[heartbeat.PodRule]int `json:"owners_by_evidence,omitempty"`
}

// PodRuleNone counts, in OwnersByEvidence, the owners Kubernetes says nothing of.
const PodRuleNone heartbeat.PodRule = "none"

// readPods lists the pods once for this pass, within timeout, and gives the
// view the pods earlier lists showed; the list is then remembered, and rd
// says what was read (rd.kubernetes) and the memory to record in Redis
// (rd.podsSeen). A failure is never the pass's: it is reported, and the
// snapshot has no pods, so the judge decides as it would without Kubernetes.
// confirmed is when the pods were last known current (the reaper's clock,
// for an age only: the snapshot's view gets its age once the database was
// read).
func (r *Reaper) readPods(ctx context.Context, rd *readResult) (view *heartbeat.PodView, confirmed time.Time) {
	src := r.cfg.PodSource
	if src == nil {
		return nil, time.Time{}
	}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.KubernetesTimeout)
	defer cancel()
	var (
		pods []heartbeat.Pod
		err  error
	)
	if cs, ok := src.(ConfirmedPodSource); ok {
		pods, confirmed, err = cs.ListPodsConfirmed(ctx)
	} else {
		confirmed = time.Now()
		pods, err = src.ListPods(ctx)
	}
	rd.kubernetes = &KubernetesReport{Read: KubernetesRead, Where: src.Where()}
	if err != nil {
		rd.kubernetes.Read, rd.kubernetes.Error = KubernetesUnavailable, err.Error()
		r.log.Warn("kubernetes unavailable, judging by heartbeats alone", slog.String("where", src.Where()), slog.String("error", err.Error()))
		return nil, time.Time{}
	}
	rd.kubernetes.Pods = len(pods)
	now := time.Now()
	seen := r.rememberedPods(ctx, src.Where(), now)
	rd.podsSeen = r.rememberPods(src.Where(), pods, now)
	return heartbeat.NewPodView(pods, seen), confirmed
}

// confirmHolds lists the pods once more, after the database was read, when
// the pass's view would hold a worker alive on evidence too old to hold by
// itself (heartbeat.MustConfirmHolds): a watch's cache whose watch may have
// stalled silently since its last word, with the pod deleted meanwhile. The
// holds then rest on that list alone (heartbeat.PodView.ConfirmHolds); the
// other rules keep the view listed before the database. A failed list holds
// nobody: those workers are judged by their heartbeats. Hung workers are
// rare, so this list is too.
func (r *Reaper) confirmHolds(ctx context.Context, view *heartbeat.PodView, rows []heartbeat.AppStatus, now time.Time) {
	if !heartbeat.MustConfirmHolds(rows, now, r.cfg.Policy.HeartbeatGrace, view, r.cfg.Policy.Kubernetes) {
		return
	}
	src := r.cfg.PodSource
	ctx, cancel := context.WithTimeout(ctx, r.cfg.KubernetesTimeout)
	defer cancel()
	var (
		pods []heartbeat.Pod
		err  error
	)
	if d, ok := src.(DirectPodSource); ok {
		pods, err = d.ListPodsDirect(ctx)
	} else {
		pods, err = src.ListPods(ctx)
	}
	if err != nil {
		view.ConfirmHolds(nil)
		r.log.Warn("kubernetes list to confirm a hung worker's hold failed: judging it by heartbeats",
			slog.String("where", src.Where()), slog.Duration("view_age", view.Age()), slog.String("error", err.Error()))
		return
	}
	// Sent after the database was read: confirmed no earlier than its now.
	view.ConfirmHolds(heartbeat.NewPodView(pods, nil))
	r.log.Info("kubernetes pods listed to confirm a hung worker's hold", slog.String("where", src.Where()),
		slog.Duration("view_age", view.Age()))
}

// noteKubernetes counts the owners by evidence and warns of the workers that
// Kubernetes keeps alive although they do not heartbeat.
func (r *Reaper) noteKubernetes(plan *judge.Plan, rep *Report) {
	k := rep.Kubernetes
	if k == nil || k.Read != KubernetesRead {
		return
	}
	k.OwnersByEvidence = map[heartbeat.PodRule]int{}
	for _, o := range plan.FleetOwners {
		if o.Kubernetes == nil {
			k.OwnersByEvidence[PodRuleNone]++
			continue
		}
		k.OwnersByEvidence[o.Kubernetes.Rule]++
		if o.Kubernetes.Rule == heartbeat.PodAliveNotHeartbeating {
			r.log.Warn("worker alive by Kubernetes but not heartbeating", slog.String("owner", o.Name),
				slog.String("pod", o.Kubernetes.Name), slog.Duration("heartbeat_age", o.HeartbeatAge))
		}
	}
}

// EvidenceRules are the names OwnersByEvidence counts by, in order: every
// Kubernetes rule and PodRuleNone.
var EvidenceRules = slices.Insert(slices.Clone(heartbeat.PodRules), slices.Index(heartbeat.PodRules, heartbeat.PodNotInView), PodRuleNone)

// The pods earlier complete lists showed, by name: a pod's absence proves a
// death only for a pod the reaper has seen (docs/verdicts.md). A long-running
// reaper keeps them in memory; every pass that writes also keeps them in
// Redis (recordPodsSeen), so that one-shot runs (the CronJob) and
// other replicas know them.

// podMemory is the reaper's own memory of the pods it has seen, by view.
type podMemory struct {
	mu     sync.Mutex
	byName map[string]redislocks.SeenPod
}

// remembered returns the pods of view where seen by earlier lists since
// now - ttl, from the reaper's memory and from Redis; a Redis that cannot be
// read leaves the memory alone (fewer sightings: fewer absences count).
func (r *Reaper) rememberedPods(ctx context.Context, where string, now time.Time) map[string]heartbeat.SeenPod {
	stored, err := redislocks.ReadSeenPods(ctx, r.rdb, r.cfg.RedisTimeout)
	if err != nil {
		r.log.Warn("pods seen by earlier passes unreadable, judging with this reaper's memory", slog.String("error", err.Error()))
	}
	m := &r.pods
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byName == nil {
		m.byName = map[string]redislocks.SeenPod{}
	}
	for name, p := range stored {
		if old, ok := m.byName[name]; !ok || p.Seen.After(old.Seen) {
			m.byName[name] = p
		}
	}
	out := map[string]heartbeat.SeenPod{}
	for name, p := range m.byName {
		switch {
		case now.Sub(p.Seen) > r.cfg.SuspectTTL:
			delete(m.byName, name)
		case p.Where == where:
			out[name] = p.SeenPod
		}
	}
	return out
}

// rememberPods adds the pods of one complete list of view where to the
// memory and returns a copy of the memory, for recordPodsSeen.
func (r *Reaper) rememberPods(where string, pods []heartbeat.Pod, now time.Time) map[string]redislocks.SeenPod {
	m := &r.pods
	m.mu.Lock()
	for _, p := range pods {
		m.byName[p.Name] = redislocks.SeenPod{SeenPod: heartbeat.SeenPod{UID: p.UID, Seen: now}, Where: where}
	}
	snapshot := make(map[string]redislocks.SeenPod, len(m.byName))
	for k, v := range m.byName {
		snapshot[k] = v
	}
	m.mu.Unlock()
	return snapshot
}

// recordPodsSeen writes the memory of the pods seen to Redis, when a list
// came back (seen is not nil). It is the one Redis write outside the act
// phase: a pass that writes makes it right after its read, even when the
// read failed and the pass acts on nothing, because later passes (a
// one-shot run, another replica) prove a pod's absence only for a pod some
// pass saw. The write is not cut short by a pass being stopped: the list
// was made, and RedisTimeout bounds it. A failure is only logged.
func (r *Reaper) recordPodsSeen(ctx context.Context, seen map[string]redislocks.SeenPod) {
	if seen == nil {
		return
	}
	if err := redislocks.WriteSeenPods(context.WithoutCancel(ctx), r.rdb, r.cfg.RedisTimeout, r.cfg.SuspectTTL, seen); err != nil {
		r.log.Warn("pods seen not remembered in Redis", slog.String("error", err.Error()))
	}
}

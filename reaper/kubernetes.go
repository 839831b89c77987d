package reaper

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
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
// view the pods earlier lists showed; the list is then remembered (in Redis
// too unless dryRun). A failure is never the pass's: it is reported, and the
// snapshot has no pods, so the judge decides as it would without Kubernetes.
// confirmed is when the pods were last known current (the reaper's clock,
// for an age only: the snapshot's view gets its age once the database was
// read).
func (r *Reaper) readPods(ctx context.Context, rep *Report, dryRun bool) (view *heartbeat.PodView, confirmed time.Time) {
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
	rep.Kubernetes = &KubernetesReport{Read: KubernetesRead, Where: src.Where()}
	if err != nil {
		rep.Kubernetes.Read, rep.Kubernetes.Error = KubernetesUnavailable, err.Error()
		r.log.Warn("kubernetes unavailable, judging by heartbeats alone", slog.String("where", src.Where()), slog.String("error", err.Error()))
		return nil, time.Time{}
	}
	rep.Kubernetes.Pods = len(pods)
	now := time.Now()
	seen := r.rememberedPods(ctx, src.Where(), now)
	r.rememberPods(ctx, src.Where(), pods, now, dryRun)
	return heartbeat.NewPodView(pods, seen), confirmed
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

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat/kube"
	"github.com/lock-reaper/lock-reaper/internal/daemon"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/kubeapi"
	"github.com/lock-reaper/lock-reaper/reaper"
)

// scenarioUnjam measures the time to unjam: from a worker's death to its
// locks being released by the daemon and the task they blocked starting,
// with and without Kubernetes evidence. Time is scaled down (-time-scale):
// every duration of the fleet, the daemon and the rules is divided by the
// factor, the mechanism is the real one (the daemon's scheduled passes of a
// real reaper, the simulated fleet in pods, real Redis and PostgreSQL), and
// the figures are multiplied back.
const scenarioUnjam = "unjam"

// The production durations the run scales down: pulpcore's worker and API
// ttl (heartbeat every ttl/3), and the defaults of the daemon and the rules.
const (
	unjamWorkerTTL     = sim.DefaultWorkerTTL
	unjamAPITTL        = sim.DefaultAPITTL
	unjamGrace         = reaper.DefaultHeartbeatGrace
	unjamSchedule      = time.Minute // daemon.ScheduleDefault, "@every 1m"
	unjamJitter        = 5 * time.Second
	unjamFullScan      = 10 * time.Minute
	unjamClockSkew     = reaper.DefaultClockSkew
	unjamPodResolution = sim.DefaultPodTimeResolution
	// unjamPoll is how often an idle simulated worker fetches, not scaled:
	// pulpcore's Redis worker sleeps number of workers × 10 ms between
	// fetches, here 30 ms.
	unjamPoll    = 25 * time.Millisecond
	unjamWorkers = 3
)

// Deaths the scenario measures.
const (
	deathPodDeleted = "kill -9, pod deleted (new pod name)"
	deathRestarted  = "container restarted under the same name"
	deathAlive      = "alive, heartbeats stopped (DB slow)"
	deathNodeCrash  = "node crash (pod left Running; Ready False at 40 s, taint eviction at 300 s)"
)

// Values of -unjam-cases.
const (
	unjamCasesAll   = "all"
	unjamCasesList  = "list"
	unjamCasesWatch = "watch"
)

// The node lifecycle's defaults a node crash goes through: node-monitor-
// grace-period (the pods' Ready turns False) and the not-ready and
// unreachable taints' default toleration (the taint manager deletes them).
const (
	nodeMonitorGrace  = 40 * time.Second
	taintToleration   = 300 * time.Second
	watchMirrorPeriod = 10 * time.Millisecond
)

// unjamCase is one death measured with or without Kubernetes evidence.
type unjamCase struct {
	Death      string `json:"death"`
	Kubernetes bool   `json:"kubernetes"`
	// Watch: the pods come from a watch of a stand-in API server that the
	// fleet's pods are mirrored into, and its reports of a container's end
	// wake the daemon.
	Watch bool `json:"watch,omitempty"`
	// Fault is what goes wrong with the watch: watchStalled or
	// watchForbidden; "" for none.
	Fault string `json:"watch_fault,omitempty"`
}

// UnjamResults is what the unjam scenario measured.
type UnjamResults struct {
	Machine Machine       `json:"machine"`
	Method  UnjamMethod   `json:"method"`
	Cases   []UnjamFigure `json:"cases"`
}

// UnjamMethod is how the run scaled time; durations are production's.
type UnjamMethod struct {
	TimeScale       int     `json:"time_scale"`
	Schedule        string  `json:"schedule"`
	JitterS         float64 `json:"jitter_s"`
	WorkerTTLS      float64 `json:"worker_ttl_s"`
	HeartbeatGraceS float64 `json:"heartbeat_grace_s"`
	HungWorkerGrace float64 `json:"hung_worker_grace_s"`
	ClockSkewS      float64 `json:"clock_skew_s"`
	PodResolutionS  float64 `json:"pod_time_resolution_s"`
	RestartDelayS   float64 `json:"restart_delay_s"`
	// PollMS is the workers' fetch period in real milliseconds (not scaled).
	PollMS  float64 `json:"worker_poll_ms_unscaled"`
	Workers int     `json:"workers"`
	// WatchTimeScale is the watch cases' time scale.
	WatchTimeScale int `json:"watch_time_scale"`
	// HeartbeatPollS is the daemon's heartbeat_poll; WatchMaxSilenceS and
	// BookmarkS the watch's silence limit and the API server's bookmark
	// interval (all scaled with the cases).
	HeartbeatPollS   float64 `json:"heartbeat_poll_s"`
	WatchMaxSilenceS float64 `json:"watch_max_silence_s"`
	BookmarkS        float64 `json:"bookmark_interval_s"`
}

// UnjamFigure is one case's trials and their summary, in production seconds.
type UnjamFigure struct {
	unjamCase
	// Expected is the range the rules and the schedule give.
	Expected string       `json:"expected"`
	Trials   []UnjamTrial `json:"trials"`
	Released Spread       `json:"released_s"`
	Started  Spread       `json:"started_s"`
	// AfterContract is from the moment the rules allowed the release
	// (contractMoment) to the release; AfterDeadline from the last
	// heartbeat + ttl + heartbeat_grace, negative when pod evidence freed
	// the locks before it.
	AfterContract Spread `json:"after_contract_s"`
	AfterDeadline Spread `json:"after_heartbeat_deadline_s"`
	// Woken and ReleasedAfterReport, for the watch cases whose death the
	// kubelet reports: from that report to the start of a pass, and to the
	// release.
	Woken               Spread `json:"pass_after_report_s"`
	ReleasedAfterReport Spread `json:"released_after_report_s"`
	// Rules counts the trials by the Kubernetes rule of the releasing pass's
	// finding ("heartbeats" when the ordinary rules alone decided).
	Rules map[string]int `json:"rules"`
}

// UnjamTrial is one death: seconds (scaled back) from it to the release of
// the dead owner's locks and to the start of the task they blocked.
type UnjamTrial struct {
	ReleasedS float64 `json:"released_s"`
	StartedS  float64 `json:"started_s"`
	// Contract names the moment the rules allowed the release, and
	// AfterContractS and AfterDeadlineS are the release's delay from it and
	// from the last heartbeat + ttl + heartbeat_grace.
	Contract       string  `json:"contract_moment"`
	AfterContractS float64 `json:"after_contract_s"`
	AfterDeadlineS float64 `json:"after_heartbeat_deadline_s"`
	Verdict        string  `json:"verdict"`
	Rule           string  `json:"rule"`
	// Passes counts the daemon's passes from the death to the release.
	Passes int `json:"passes"`
	// StoppedOnSignal: a worker that was alive aborted its task on the cancel
	// signal of the releasing pass.
	StoppedOnSignal bool `json:"stopped_on_signal,omitempty"`
	// Reported says the kubelet reported the container's end (the watch
	// cases); WokenS is from that report to the start of the next pass,
	// ReleasedAfterReportS to the release.
	Reported             bool    `json:"reported,omitempty"`
	WokenS               float64 `json:"pass_after_report_s,omitempty"`
	ReleasedAfterReportS float64 `json:"released_after_report_s,omitempty"`
}

// Spread is the minimum, median and maximum of a figure.
type Spread struct {
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
}

func spreadOf(v []float64) Spread {
	if len(v) == 0 {
		return Spread{}
	}
	s := slices.Sorted(slices.Values(v))
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Spread{Min: round1(s[0]), Median: round1(med), Max: round1(s[len(s)-1])}
}

func round1(f float64) float64 { return math.Round(f*10) / 10 }

// unjamCases are measured in this order, each case's trials one after the
// other, the cases side by side.
var unjamCases = []unjamCase{
	{deathPodDeleted, false, false, ""}, {deathPodDeleted, true, false, ""},
	{deathRestarted, false, false, ""}, {deathRestarted, true, false, ""},
	{deathAlive, false, false, ""}, {deathAlive, true, false, ""},
	{deathPodDeleted, true, true, ""}, {deathRestarted, true, true, ""},
	{deathPodDeleted, true, true, watchStalled}, {deathPodDeleted, true, true, watchForbidden},
	{deathNodeCrash, true, true, ""}, {deathAlive, true, true, ""},
}

// selected are the cases -unjam-cases asks for.
func (o options) selected() []unjamCase {
	var out []unjamCase
	for _, c := range unjamCases {
		if o.unjamCases == unjamCasesAll || (o.unjamCases == unjamCasesWatch) == c.Watch {
			out = append(out, c)
		}
	}
	return out
}

// forCase is the options a case runs with. The watch cases whose rules
// compare container times with the rows' (a deleted pod, a restart) run at
// their own time scale: the API's timestamps have whole seconds. A node
// crash and a live worker compare none that the seconds could blur (the
// pod's start is long before the row), so they keep the run's scale.
func (o options) forCase(c unjamCase) options {
	if !c.Watch {
		return o
	}
	o.trials, o.aliveTrials = o.watchTrials, 1
	if c.Death == deathPodDeleted || c.Death == deathRestarted {
		o.timeScale = o.watchTimeScale
	}
	return o
}

// scaled divides a production duration by the time scale.
func (o options) scaled(d time.Duration) time.Duration { return d / time.Duration(o.timeScale) }

// back multiplies a measured duration back to production seconds.
func (o options) back(d time.Duration) float64 { return d.Seconds() * float64(o.timeScale) }

func (o options) validateUnjam() error {
	switch {
	case o.timeScale < 1 || unjamSchedule%time.Duration(o.timeScale) != 0 || o.scaled(unjamSchedule)%time.Second != 0:
		return errors.New("-time-scale must divide the 1m schedule into whole seconds (cron's @every): 1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30 or 60")
	case o.trials < 1 || o.aliveTrials < 1:
		return errors.New("-trials and -alive-trials must be at least 1")
	case o.hungWorkerGrace < 0 || o.restartDelay < 0:
		return errors.New("-hung-worker-grace and -restart-delay must not be negative")
	case o.unjamCases != unjamCasesAll && o.unjamCases != unjamCasesList && o.unjamCases != unjamCasesWatch:
		return errors.New("-unjam-cases must be all, list or watch")
	case o.watchTimeScale < 1 || unjamSchedule%time.Duration(o.watchTimeScale) != 0 || (unjamSchedule/time.Duration(o.watchTimeScale))%time.Second != 0:
		return errors.New("-watch-time-scale must divide the 1m schedule into whole seconds")
	case o.watchTrials < 1:
		return errors.New("-watch-trials must be at least 1")
	}
	return nil
}

// runUnjam measures every case and writes the table and, when asked, the JSON.
func runUnjam(ctx context.Context, o options, stdout io.Writer, logf func(string, ...any)) error {
	res := &UnjamResults{Machine: describeMachine(), Method: UnjamMethod{
		TimeScale: o.timeScale, Schedule: fmt.Sprintf("@every %v (run: @every %v)", unjamSchedule, o.scaled(unjamSchedule)),
		JitterS: unjamJitter.Seconds(), WorkerTTLS: unjamWorkerTTL.Seconds(), HeartbeatGraceS: unjamGrace.Seconds(),
		HungWorkerGrace: o.hungWorkerGrace.Seconds(), ClockSkewS: unjamClockSkew.Seconds(), PodResolutionS: unjamPodResolution.Seconds(),
		RestartDelayS: o.restartDelay.Seconds(), PollMS: float64(unjamPoll.Milliseconds()), Workers: unjamWorkers,
		WatchTimeScale: o.watchTimeScale, HeartbeatPollS: daemon.HeartbeatPollDefault.Seconds(),
		WatchMaxSilenceS: kube.DefaultMaxSilence.Seconds(), BookmarkS: kubeapi.DefaultBookmarkInterval.Seconds(),
	}}
	cases := o.selected()
	res.Cases = make([]UnjamFigure, len(cases))
	errs := make([]error, len(cases))
	var machineOnce sync.Once
	var wg sync.WaitGroup
	for i, c := range cases {
		wg.Go(func() {
			o := o.forCase(c)
			fig := UnjamFigure{unjamCase: c, Expected: o.expected(c), Rules: map[string]int{}}
			trials := o.trials
			if c.Death == deathAlive || c.Death == deathNodeCrash {
				trials = o.aliveTrials
			}
			for n := range trials {
				tr, err := o.unjamTrial(ctx, c, &machineOnce, &res.Machine)
				if err != nil {
					errs[i] = fmt.Errorf("%s, kubernetes %v, watch %v %s, trial %d: %w", c.Death, c.Kubernetes, c.Watch, c.Fault, n+1, err)
					return
				}
				logf("%s, kubernetes %v, watch %v %s, trial %d: released after %.1f s (%s), %.1f s after %s, %.1f s after ttl + grace; blocked task started after %.1f s; pass %.1f s after the kubelet's report (reported: %v)",
					c.Death, c.Kubernetes, c.Watch, c.Fault, n+1, tr.ReleasedS, tr.Rule, tr.AfterContractS, tr.Contract, tr.AfterDeadlineS, tr.StartedS, tr.WokenS, tr.Reported)
				fig.Trials = append(fig.Trials, tr)
				fig.Rules[tr.Rule]++
			}
			var rel, start, woken, after, contract, deadline []float64
			for _, tr := range fig.Trials {
				rel, start = append(rel, tr.ReleasedS), append(start, tr.StartedS)
				contract, deadline = append(contract, tr.AfterContractS), append(deadline, tr.AfterDeadlineS)
				if tr.Reported {
					woken, after = append(woken, tr.WokenS), append(after, tr.ReleasedAfterReportS)
				}
			}
			fig.Released, fig.Started = spreadOf(rel), spreadOf(start)
			fig.AfterContract, fig.AfterDeadline = spreadOf(contract), spreadOf(deadline)
			fig.Woken, fig.ReleasedAfterReport = spreadOf(woken), spreadOf(after)
			res.Cases[i] = fig
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := writeUnjamMarkdown(stdout, res); err != nil {
		return err
	}
	if o.jsonPath != "" {
		return writeJSON(o.jsonPath, res)
	}
	return nil
}

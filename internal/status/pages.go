package status

import (
	"bytes"
	"context"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lock-reaper/lock-reaper/internal/explain"
	"github.com/lock-reaper/lock-reaper/internal/nearest"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/history"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/pulpdb"
)

// page is what every template gets: the view and the page's own data.
type page struct {
	Title string
	Nav   string
	View  *View
	// Served is when the page was rendered, for the snapshot's age.
	Served  time.Time
	Refresh int
	Data    any
}

// templates are parsed at the first page served, not when the program
// starts: every command (a CronJob's once among them) links this package,
// and parsing them took about half of the program's start-up allocations.
var templates = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("").Funcs(funcs).ParseFS(assets, "assets/templates/*.html"))
})

// render writes a page; a template error is logged and answered 500
// without the half-written page.
func (s *Server) render(w http.ResponseWriter, r *http.Request, code int, name string, p page) {
	p.Served = time.Now()
	if p.View == nil {
		p.View = s.view.Load()
	}
	if s.opts.Refresh > 0 {
		p.Refresh = int(s.opts.Refresh / time.Second)
	}
	var buf bytes.Buffer
	if err := templates().ExecuteTemplate(&buf, name, p); err != nil {
		s.opts.Logger.Error("status page: render", slog.String("page", name), slog.String("error", err.Error()))
		http.Error(w, "500 the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	if r.Method != http.MethodHead {
		_, _ = w.Write(buf.Bytes())
	}
}

// noView answers a page asked for before the first snapshot.
func (s *Server) noView(w http.ResponseWriter, r *http.Request, nav string) bool {
	if s.view.Load() != nil {
		return false
	}
	s.render(w, r, http.StatusServiceUnavailable, "waiting", page{Title: "No snapshot yet", Nav: nav})
	return true
}

func (s *Server) overview(w http.ResponseWriter, r *http.Request) {
	if s.noView(w, r, "overview") {
		return
	}
	v := s.view.Load()
	s.render(w, r, http.StatusOK, "overview", page{Title: "Overview", Nav: "overview", View: v, Data: plotOf(v.Passes, v.PassesRead)})
}

// passesData is the passes page: the chart of the day and a page of its
// passes.
type passesData struct {
	Plot  plot
	Rows  []history.Entry
	Pager pager
}

// passesPage lists the passes of any reaper over the last day, a page at a
// time, with the chart, from the history of passes read with the view.
func (s *Server) passesPage(w http.ResponseWriter, r *http.Request) {
	if s.noView(w, r, "passes") {
		return
	}
	v := s.view.Load()
	d := passesData{Plot: plotOf(v.Passes, v.PassesRead), Pager: pagerOf(r, len(v.Passes), passesPerPage, "pass")}
	d.Rows = v.Passes[d.Pager.From:d.Pager.To]
	s.render(w, r, http.StatusOK, "passes", page{Title: "Passes", Nav: "passes", View: v, Data: d})
}

// passesPerPage is how many passes a page of /passes lists: two hours of a
// pass a minute.
const passesPerPage = 120

// lostTasksData is the page of the tasks the plan judged.
type lostTasksData struct {
	Rows  []judge.TaskJudgement
	Pager pager
}

// lostTasksPage lists the lost, orphaned and stuck tasks the view's plan
// judged, a page at a time: the overview shows the first few.
func (s *Server) lostTasksPage(w http.ResponseWriter, r *http.Request) {
	if s.noView(w, r, "overview") {
		return
	}
	v := s.view.Load()
	if s.refreshing(w, r, v, "overview") {
		return
	}
	ts := v.Tasks()
	d := lostTasksData{Pager: s.pager(r, len(ts), "task")}
	d.Rows = ts[d.Pager.From:d.Pager.To]
	s.render(w, r, http.StatusOK, "lost-tasks", page{Title: "Lost, orphaned and stuck tasks", Nav: "overview", View: v, Data: d})
}

// ownersData is the owners page.
type ownersData struct {
	Rows     []OwnerRow
	Liveness string
	// Verdict is the verdict asked for, by name: an unknown one matches
	// nothing.
	Verdict string
	Pager   pager
}

func (s *Server) ownersPage(w http.ResponseWriter, r *http.Request) {
	if s.noView(w, r, "owners") {
		return
	}
	v := s.view.Load()
	q := r.URL.Query()
	d := ownersData{Liveness: q.Get("liveness"), Verdict: q.Get("verdict")}
	var want judge.Verdict
	_ = want.UnmarshalText([]byte(d.Verdict)) // an unknown name matches nothing
	// Counted first, then only the page's rows copied: a copy of every
	// matching row was held for each view of the page.
	match := func(o *OwnerRow) bool {
		return (d.Liveness == "" || o.Liveness == d.Liveness) && (d.Verdict == "" || o.ByVerdict[want] > 0)
	}
	n := 0
	for i := range v.Owners {
		if match(&v.Owners[i]) {
			n++
		}
	}
	d.Pager = s.pager(r, n, "owner")
	at := 0
	for i := range v.Owners {
		if o := &v.Owners[i]; match(o) {
			if at >= d.Pager.From && at < d.Pager.To {
				d.Rows = append(d.Rows, *o)
			}
			at++
		}
	}
	s.render(w, r, http.StatusOK, "owners", page{Title: "Owners", Nav: "owners", View: v, Data: d})
}

// holdingFilter keeps the holdings asked for in the query string, as the
// flags of `lock-reaper locks` do; empty fields match everything.
type holdingFilter struct {
	Owner, Resource, Task string
	// Verdict is by name: an unknown one matches nothing.
	Verdict string
}

func (f holdingFilter) match(jd *judge.Judgement) bool {
	return (f.Owner == "" || jd.Owner == f.Owner) &&
		(f.Verdict == "" || jd.Verdict.String() == f.Verdict) &&
		(f.Resource == "" || jd.Resource() == f.Resource) &&
		(f.Task == "" || reaper.HoldingTask(&jd.Holding, jd.Evidence().Via) == f.Task)
}

func (f holdingFilter) empty() bool { return f == holdingFilter{} }

// holdingsData is the holdings page.
type holdingsData struct {
	Filter  holdingFilter
	Rows    []judge.Judgement
	Total   int
	Pager   pager
	Verdict []judge.Verdict
	// Unknown is set when the owner asked for holds nothing.
	Unknown *unknown
}

// holdingVerdicts are the verdicts a holding can get, for the filter form.
var holdingVerdicts = []judge.Verdict{judge.VerdictHealthy, judge.VerdictJustified, judge.VerdictPending, judge.VerdictTaskFinished, judge.VerdictOwnerDead, judge.VerdictOwnerGone, judge.VerdictTaskLost, judge.VerdictTaskMissing, judge.VerdictUnclaimed, judge.VerdictNoTask}

func (s *Server) holdingsPage(w http.ResponseWriter, r *http.Request) {
	if s.noView(w, r, "holdings") {
		return
	}
	v := s.view.Load()
	if s.refreshing(w, r, v, "holdings") {
		return
	}
	q := r.URL.Query()
	f := holdingFilter{Owner: param(q, "owner"), Resource: param(q, "resource"), Task: strings.ToLower(param(q, "task")), Verdict: q.Get("verdict")}
	all := v.Holdings()
	// A key filter on one resource or task uses the index, not a walk.
	var candidates []int32
	switch {
	case f.Resource != "":
		candidates = v.positionsOf(judge.ResourceKeyPrefix + f.Resource)
	}
	pgSize := s.opts.PageSize
	from := (pageNumber(r) - 1) * pgSize
	d := holdingsData{Filter: f, Verdict: holdingVerdicts}
	take := func(jd *judge.Judgement) {
		if d.Total >= from && d.Total < from+pgSize {
			d.Rows = append(d.Rows, *jd)
		}
		d.Total++
	}
	switch {
	case f.empty():
		d.Total = len(all)
		if from < len(all) {
			d.Rows = all[from:min(from+pgSize, len(all))]
		}
	case candidates != nil || f.Resource != "":
		for _, i := range candidates {
			if f.match(&all[i]) {
				take(&all[i])
			}
		}
	default:
		for i := range all {
			if f.match(&all[i]) {
				take(&all[i])
			}
		}
	}
	d.Pager = s.pager(r, d.Total, "holding")
	code := http.StatusOK
	if _, known := v.Owner(f.Owner); f.Owner != "" && !known {
		code, d.Unknown = http.StatusNotFound, unknownOwner(v, f.Owner)
	}
	s.render(w, r, code, "holdings", page{Title: "Holdings", Nav: "holdings", View: v, Data: d})
}

// taskData is the task page.
type taskData struct {
	Ref   string
	ID    string
	Error string
	Ex    *explain.Explanation
	// Queued is the task's entry in the blocked queue, if it waits there.
	Queued *Queued
	// ReadOnlyEnd says, on a read-only page, what ends a block, as no pass
	// of this process will, and ReadOnlyCommands the commands that end it.
	ReadOnlyEnd      string
	ReadOnlyCommands []Command
}

func (s *Server) taskPage(w http.ResponseWriter, r *http.Request) {
	if s.noView(w, r, "task") {
		return
	}
	v := s.view.Load()
	ref := r.PathValue("ref")
	if ref == "" {
		ref = r.URL.Query().Get("task")
	}
	d := taskData{Ref: ref}
	if ref == "" {
		s.render(w, r, http.StatusOK, "task", page{Title: "Task", Nav: "task", View: v, Data: d})
		return
	}
	// The href forms (/pulp/api/v3/tasks/UUID/) arrive as the rest of the path.
	if strings.Contains(ref, "/") && !strings.HasPrefix(ref, "/") && !strings.Contains(ref, "://") {
		ref = "/" + ref
	}
	id, err := explain.TaskIDOf(ref)
	if err != nil {
		d.Error = err.Error()
		s.render(w, r, http.StatusBadRequest, "task", page{Title: "Task", Nav: "task", View: v, Data: d})
		return
	}
	d.ID = id
	if s.refreshing(w, r, v, "task") {
		return
	}
	ex, err := s.explain.get(r.Context(), v, id, func(ctx context.Context) (explain.Explanation, error) {
		ex, err := s.src.ExplainedTask(ctx, id)
		if err != nil {
			return explain.Explanation{}, err
		}
		e := explain.On(v.explainedOn(ex), ex, id)
		if v.ReadOnly() {
			e.Conclusion = readOnlyWords(e.Conclusion)
		}
		return e, nil
	})
	if err != nil {
		d.Error = "the task could not be read: " + err.Error()
		s.render(w, r, http.StatusServiceUnavailable, "task", page{Title: "Task " + id, Nav: "task", View: v, Data: d})
		return
	}
	d.Ex = &ex
	if owner := blockingOwner(ex); v.ReadOnly() && owner != "" {
		d.ReadOnlyEnd = "This page releases nothing: it shows a read-only inspection. Last pass: " + v.LastPassWords() + ". To end the block now"
		d.ReadOnlyCommands = []Command{{Line: releaseCommand(owner), Then: "then again without --dry-run"}}
	}
	for i := range v.Queue {
		if v.Queue[i].Row.ID == id {
			d.Queued = &v.Queue[i]
		}
	}
	code := http.StatusOK
	if ex.Status == explain.StatusNotFound {
		// No core_task row: the page still says what Redis holds for it.
		code = http.StatusNotFound
	}
	s.render(w, r, code, "task", page{Title: "Task " + id, Nav: "task", View: v, Data: d})
}

// explainedOn is the inspection a task page explains a task on: the view's,
// less what its pass released, so that a released holder is not named as
// holding anything (the snapshot was read before the pass acted). Only the
// task's own lock and its resources' holdings matter to it, as in the queue:
// those alone are handed over, found through the view's index, since
// explain indexes every holding it is given (at a dead worker's 200,000
// holdings, tens of megabytes for each task page served).
func (v *View) explainedOn(ex *pulpdb.ExplainedTask) *reaper.Inspection {
	if ex == nil {
		return v.In
	}
	var record []string
	if ex.Row != nil {
		record = ex.Row.Reserved
	}
	sub := *v.In
	sub.Plan.Holdings = v.holdingsAfter(v.relevant(ex.TaskID, record))
	return &sub
}

// readOnlyWords rewords explain's promise of a next pass for a page that
// runs none (`lock-reaper status`): what a pass would do, not when.
func readOnlyWords(s string) string {
	return strings.ReplaceAll(s, "the next pass ", "a reaper's pass, once one runs, ")
}

// blockingOwner is the owner of the first stale or suspect holding in an
// explained task's way, or "".
func blockingOwner(ex explain.Explanation) string {
	if ex.Status != explain.StatusBlocked {
		return ""
	}
	for _, h := range ex.TaskLocks {
		if h.Blocks && h.Action != judge.ActionKeep {
			return h.Owner
		}
	}
	for _, rn := range ex.Resources {
		for _, h := range rn.Holders {
			if h.Blocks && h.Action != judge.ActionKeep {
				return h.Owner
			}
		}
	}
	return ""
}

// param is a filter's value. The filter forms show a value holding control
// characters in its quoted form (see visible), and take it back in that form.
func param(q url.Values, name string) string {
	v := q.Get(name)
	if strings.HasPrefix(v, `"`) {
		if u, err := strconv.Unquote(v); err == nil {
			return u
		}
	}
	return v
}

// pager is one page of a table of Total rows, each a Unit ("holding").
type pager struct {
	Page, Pages, Total, From, To int
	Prev, Next                   string
	Unit                         string
}

func pageNumber(r *http.Request) int {
	n, err := strconv.Atoi(r.URL.Query().Get("page"))
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// pager places the page the request asks for among total rows of unit, a
// page size each; Prev and Next are the same query string with the page
// changed.
func (s *Server) pager(r *http.Request, total int, unit string) pager {
	return pagerOf(r, total, s.opts.PageSize, unit)
}

func pagerOf(r *http.Request, total, size int, unit string) pager {
	p := pager{Page: pageNumber(r), Total: total, Pages: max(1, (total+size-1)/size), Unit: unit}
	p.Page = min(p.Page, p.Pages)
	p.From = min((p.Page-1)*size, total)
	p.To = min(p.From+size, total)
	link := func(n int) string {
		q := r.URL.Query()
		q.Set("page", strconv.Itoa(n))
		return r.URL.Path + "?" + q.Encode()
	}
	if p.Page > 1 {
		p.Prev = link(p.Page - 1)
	}
	if p.Page < p.Pages {
		p.Next = link(p.Page + 1)
	}
	return p
}

// query builds a query string from pairs of names and values, leaving out
// the empty values. It is a template.URL because url.Values.Encode has
// escaped every value already; the templates put it after a fixed path.
func query(kv ...string) template.URL {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	return template.URL(q.Encode()) //nolint:gosec // escaped by Encode
}

// unknown is what a page says of an owner the snapshot does not know: it
// answers 404 with the names nearest to the one asked for.
type unknown struct {
	Name    string
	Nearest []string
}

func unknownOwner(v *View, name string) *unknown {
	names := make([]string, len(v.Owners))
	for i, o := range v.Owners {
		names[i] = o.Name
	}
	return &unknown{Name: name, Nearest: nearest.Names(name, names, 3, false)}
}

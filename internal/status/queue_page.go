package status

import (
	"net/http"
)

// queueData is the blocked queue page: the causes, each with its tasks.
type queueData struct {
	Filter causeFilter
	Causes []causePart
	// Tasks counts the tasks of the causes the filter keeps.
	Tasks int
	Pager pager
	// Unknown is set when the owner asked for holds nothing.
	Unknown *unknown
}

// causePart is a cause and the part of its tasks the page shows.
type causePart struct {
	*Cause
	Shown []*Queued
	// More counts its tasks left out of the whole queue's page; Continued
	// says some came on an earlier page of the owner's.
	More      int
	Continued bool
}

// previewTasks is how many tasks of each cause the whole queue shows: the
// cause is what matters, its own page lists every task.
const previewTasks = 10

func (s *Server) queuePage(w http.ResponseWriter, r *http.Request) {
	if s.noView(w, r, "queue") {
		return
	}
	v := s.view.Load()
	q := r.URL.Query()
	d := queueData{Filter: causeFilter{Owner: param(q, "owner"), Blocked: q.Get("blocked") != "", None: q.Get("lock") == "none"}}
	var kept []*Cause
	for i := range v.Causes {
		if c := &v.Causes[i]; d.Filter.match(*c) {
			kept = append(kept, c)
			d.Tasks += len(c.Tasks)
		}
	}
	code := http.StatusOK
	if _, known := v.Owner(d.Filter.Owner); d.Filter.Owner != "" && !known && d.Tasks == 0 {
		code = http.StatusNotFound
		d.Unknown = unknownOwner(v, d.Filter.Owner)
	}
	if d.Filter.focused() {
		// One owner's tasks, all of them, a page at a time.
		d.Pager = s.pager(r, d.Tasks, "task")
		at := 0
		for _, c := range kept {
			from, to := max(d.Pager.From-at, 0), min(d.Pager.To-at, len(c.Tasks))
			if from < to {
				d.Causes = append(d.Causes, causePart{Cause: c, Shown: c.Tasks[from:to], Continued: from > 0})
			}
			at += len(c.Tasks)
		}
	} else {
		// Every cause, the first tasks of each.
		d.Pager = pagerOf(r, len(kept), max(1, s.opts.PageSize/5), "cause")
		for _, c := range kept[d.Pager.From:d.Pager.To] {
			n := min(previewTasks, len(c.Tasks))
			d.Causes = append(d.Causes, causePart{Cause: c, Shown: c.Tasks[:n], More: len(c.Tasks) - n})
		}
	}
	s.render(w, r, code, "queue", page{Title: "Blocked queue", Nav: "queue", View: v, Data: d})
}

// way is what stands in a task's way, under its cause: the locks of the
// cause's owner, and the first of each other owner's.
type way struct {
	Own, Others []Link
}

func wayOf(q *Queued, owner string) way {
	var w way
	seen := map[string]bool{owner: true}
	for _, l := range q.Chain {
		switch {
		case l.Holder.Owner == owner:
			w.Own = append(w.Own, l)
		case !seen[l.Holder.Owner]:
			seen[l.Holder.Owner] = true
			w.Others = append(w.Others, l)
		}
	}
	return w
}

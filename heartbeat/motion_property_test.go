package heartbeat

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestSecondReadOnlyProtects: whatever two reads say, a row is never more
// dead after them than by its heartbeat (a read after the snapshot may
// protect, never condemn), a row that moved within ttl + grace is never
// dead, and a row of a group of which one moved is never dead.
func TestSecondReadOnlyProtects(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 8).Draw(t, "rows")
		t0 := ltNow
		gap := time.Duration(rapid.Int64Range(0, 120).Draw(t, "gap s")) * time.Second
		var first, second []AppStatus
		var ids []string
		for i := range n {
			id := fmt.Sprintf("r%d", i)
			age := time.Duration(rapid.Int64Range(0, 300).Draw(t, id+" age s")) * time.Second
			r := AppStatus{ID: id, Name: "1@" + id, AppType: "worker", TTL: ltWorkerTTL, LastHeartbeat: t0.Add(-age)}
			first = append(first, r)
			if rapid.Bool().Draw(t, id+" still there") {
				moved := r
				if rapid.Bool().Draw(t, id+" moved") {
					moved.LastHeartbeat = r.LastHeartbeat.Add(time.Duration(rapid.Int64Range(1, 200).Draw(t, id+" by s")) * time.Second)
				}
				second = append(second, moved)
			}
			ids = append(ids, id)
		}
		m := Settle(Reading{Now: t0, Rows: first}, Reading{Now: t0.Add(gap), Rows: second}, ids, ltGrace, 0)
		before := NewFleet(first, t0, ltGrace)
		after := NewFleet(first, t0, ltGrace).WithMotion(m)
		for _, r := range first {
			_, was, _ := before.Row(r.ID)
			_, now, _ := after.Row(r.ID)
			if now < was {
				t.Fatalf("%s: %v before the second read, %v after", r.ID, was, now)
			}
			rm, _ := m.Of(r.ID)
			if (rm.Settlement == Moving || rm.Back > 0) && now == Dead {
				t.Fatalf("%s: %+v yet dead", r.ID, rm)
			}
			if rm.Settlement == Settled && gap < r.RecheckAfter(0) {
				t.Fatalf("%s settled by reads %s apart", r.ID, gap)
			}
		}
	})
}

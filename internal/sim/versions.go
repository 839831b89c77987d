package sim

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Versions are plugin versions by app label, as core_appstatus.versions (what
// a process runs) and core_task.versions (the least a worker must run to
// take the task) hold them. The simulator's versions are dotted integers
// ("3.116.0"); a part that is not a number makes the version unparsable,
// which, as in pulpcore (packaging.version.parse raises), counts as too old.
type Versions map[string]string

// pairs returns the labels and versions as two arrays in label order, the
// form hstore(text[], text[]) takes.
func (v Versions) pairs() (labels, versions []string) {
	labels = slices.Sorted(maps.Keys(v))
	versions = make([]string, len(labels))
	for i, l := range labels {
		versions[i] = v[l]
	}
	if labels == nil {
		labels, versions = []string{}, []string{}
	}
	return labels, versions
}

// Compatible is pulpcore's is_compatible: a worker running have may run a
// task that needs need when it has every label need names at a version no
// lower than the task's.
func Compatible(have, need Versions) bool {
	for label, least := range need {
		own, ok := have[label]
		if !ok {
			return false
		}
		if c, ok := compareVersions(own, least); !ok || c < 0 {
			return false
		}
	}
	return true
}

// compareVersions compares dotted integers, trailing zeros dropped as PEP 440
// does; ok is false when either does not parse.
func compareVersions(a, b string) (int, bool) {
	pa, okA := parseVersion(a)
	pb, okB := parseVersion(b)
	if !okA || !okB {
		return 0, false
	}
	for len(pa) < len(pb) {
		pa = append(pa, 0)
	}
	for len(pb) < len(pa) {
		pb = append(pb, 0)
	}
	return slices.Compare(pa, pb), true
}

func parseVersion(s string) ([]int, bool) {
	var out []int
	for part := range strings.SplitSeq(s, ".") {
		n, err := strconv.Atoi(part)
		if err != nil || n < 0 {
			return nil, false
		}
		out = append(out, n)
	}
	return out, len(out) > 0
}

// versionsOf reads an hstore given as hstore_to_array's alternating labels
// and values.
func versionsOf(flat []string) Versions {
	if len(flat) == 0 {
		return nil
	}
	v := Versions{}
	for i := 0; i+1 < len(flat); i += 2 {
		v[flat[i]] = flat[i+1]
	}
	return v
}

// SetTaskVersions sets the versions the tasks the fleet dispatches from now
// on need, as API processes of a new release dispatch tasks that need its
// plugins; nil for none.
func (f *Fleet) SetTaskVersions(v Versions) {
	v = maps.Clone(v)
	f.taskVersions.Store(&v)
}

func (f *Fleet) currentTaskVersions() Versions {
	if v := f.taskVersions.Load(); v != nil {
		return *v
	}
	return nil
}

// AddWorkerWithVersions starts one more worker running versions (nil: the
// fleet's Config.WorkerVersions) and returns its name.
func (f *Fleet) AddWorkerWithVersions(ctx context.Context, v Versions) (string, error) {
	p, err := f.addProcessWith(ctx, AppTypeWorker, v)
	if err != nil {
		return "", err
	}
	return p.name, nil
}

// setTaskVersions stores each task's versions, inside the transaction that
// inserted the tasks, so that no worker fetches one without them.
func setTaskVersions(ctx context.Context, tx pgx.Tx, ids []string, v Versions) error {
	labels, versions := v.pairs()
	if _, err := tx.Exec(ctx, `UPDATE core_task SET versions = hstore($2::text[], $3::text[]) WHERE pulp_id = ANY($1::uuid[])`,
		ids, labels, versions); err != nil {
		return fmt.Errorf("set versions of %d tasks: %w", len(ids), err)
	}
	return nil
}

// insertTasksNeeding inserts the tasks of specs that all need v.
func insertTasksNeeding(ctx context.Context, pool *pgxpool.Pool, v Versions, specs []TaskSpec) ([]string, error) {
	if len(v) == 0 {
		return InsertTasks(ctx, pool, specs...)
	}
	var ids []string
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var err error
		if ids, err = insertTasksOn(ctx, tx, specs); err != nil {
			return err
		}
		return setTaskVersions(ctx, tx, ids, v)
	})
	return ids, err
}

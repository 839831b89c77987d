package judge

import (
	"cmp"
	"slices"
	"strings"
)

// sortJudgements puts judgements in the order a plan lists them: task locks
// first (KindTask is the smallest kind; both resource kinds count as
// KindExclusive here), then by key and owner.
func sortJudgements(jds []Judgement) {
	slices.SortFunc(jds, func(a, b Judgement) int {
		return cmp.Or(cmp.Compare(min(a.Kind, KindExclusive), min(b.Kind, KindExclusive)),
			strings.Compare(a.Key, b.Key), strings.Compare(a.Owner, b.Owner))
	})
}

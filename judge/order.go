package judge

import (
	"cmp"
	"slices"
	"strings"
)

// CompareHoldings is the order a plan lists holdings in: task locks first,
// then by key and owner.
func CompareHoldings(a, b *Holding) int {
	if ta, tb := a.Kind == KindTask, b.Kind == KindTask; ta != tb {
		if ta {
			return -1
		}
		return 1
	}
	return cmp.Or(strings.Compare(a.Key, b.Key), strings.Compare(a.Owner, b.Owner))
}

// sortJudgements puts judgements in the order of CompareHoldings.
func sortJudgements(jds []Judgement) {
	slices.SortFunc(jds, func(a, b Judgement) int { return CompareHoldings(&a.Holding, &b.Holding) })
}

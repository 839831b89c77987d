package main

import (
	"unsafe"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// TypeSizes are the bytes one holding costs in the reaper's types before any
// string or task data: the snapshot's Holding and the plan's Judgement,
// which embeds a copy of it. Their sum is a floor under the heap per holding
// while a pass judges.
type TypeSizes struct {
	Holding   uintptr `json:"holding"`
	Judgement uintptr `json:"judgement"`
	Task      uintptr `json:"task"`
}

func typeSizes() TypeSizes {
	return TypeSizes{
		Holding:   unsafe.Sizeof(judge.Holding{}),
		Judgement: unsafe.Sizeof(judge.Judgement{}),
		Task:      unsafe.Sizeof(judge.Task{}),
	}
}

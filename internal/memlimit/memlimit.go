// Package memlimit gives the Go runtime a soft memory limit below the
// container's when GOMEMLIMIT sets none.
//
// The runtime's limit bounds only the memory the runtime maps (heap, stacks,
// its own metadata). A container's resident memory also holds the binary's
// code and data pages, which the kernel reads in on demand and which stay
// resident once a pass has run (BENCHMARKS.md has how much). A limit equal
// to the container's therefore lets the process outgrow it; the soft limit
// leaves Reserve for those pages and some room, and takes at most Fraction
// of a large container's limit.
package memlimit

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Env names the container's memory limit in bytes (Ki, Mi and Gi suffixes
// allowed), as the chart sets it from the container's limits.memory.
const Env = "REAPER_MEMORY_LIMIT"

// Reserve is what the soft limit leaves at least of the container's memory
// limit: room for the binary's resident pages, which are a size of their
// own whatever the container's, and for the runtime's overshoot.
const Reserve = 32 << 20

// Fraction of the container's memory limit is the most the soft limit
// takes, so that a large container keeps room in proportion; half of it is
// the least, so that a small one still leaves the runtime a heap.
const Fraction = 0.9

// SoftOf is the soft limit for a container's memory limit.
func SoftOf(container int64) int64 {
	return max(min(int64(float64(container)*Fraction), container-Reserve), container/2)
}

// cgroup files that hold the container's limit: version 2, then version 1.
const (
	cgroupV2Max   = "/sys/fs/cgroup/memory.max"
	cgroupV1Limit = "/sys/fs/cgroup/memory/memory.limit_in_bytes"
)

// noLimitV1 is at least what cgroup v1 reports when no limit is set (the
// largest multiple of the page size that fits an int64).
const noLimitV1 = 1 << 62

// Setting is the soft limit chosen and why.
type Setting struct {
	// Container is the container's limit in bytes (0: none found).
	Container int64
	// From is where Container came from: Env or a cgroup file.
	From string
	// Soft is the runtime's limit to set (0: leave the runtime's own).
	Soft int64
}

// Choose decides the runtime's soft limit: none when GOMEMLIMIT is set (the
// runtime reads it itself), else SoftOf the container's limit, read from
// Env or else from the cgroup files.
func Choose(lookup func(string) (string, bool), readFile func(string) ([]byte, error)) (Setting, error) {
	if v, ok := lookup("GOMEMLIMIT"); ok && v != "" {
		return Setting{}, nil
	}
	var s Setting
	if v, ok := lookup(Env); ok && strings.TrimSpace(v) != "" {
		n, err := parseBytes(v)
		if err != nil {
			return Setting{}, fmt.Errorf("%s=%q: %w", Env, v, err)
		}
		s.Container, s.From = n, Env
	} else {
		s.Container, s.From = cgroupLimit(readFile)
	}
	if s.Container > 0 {
		s.Soft = SoftOf(s.Container)
	}
	return s, nil
}

// cgroupLimit is the memory limit of the process's cgroup, 0 when there is
// none or it cannot be read.
func cgroupLimit(readFile func(string) ([]byte, error)) (int64, string) {
	if b, err := readFile(cgroupV2Max); err == nil {
		v := strings.TrimSpace(string(b))
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
			return n, cgroupV2Max
		}
		return 0, "" // "max": no limit
	}
	if b, err := readFile(cgroupV1Limit); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 && n < noLimitV1 {
			return n, cgroupV1Limit
		}
	}
	return 0, ""
}

// parseBytes reads a byte count: digits, optionally with a Ki, Mi or Gi
// suffix (the downward API writes plain bytes).
func parseBytes(v string) (int64, error) {
	v = strings.TrimSpace(v)
	mult := int64(1)
	for suffix, m := range map[string]int64{"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30} {
		if n, ok := strings.CutSuffix(v, suffix); ok {
			v, mult = n, m
			break
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	switch {
	case err != nil:
		return 0, errors.New("want a number of bytes, optionally with Ki, Mi or Gi")
	case n <= 0:
		return 0, errors.New("want a positive number of bytes")
	case n > math.MaxInt64/mult:
		return 0, errors.New("too large")
	}
	return n * mult, nil
}

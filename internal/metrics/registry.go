package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// NewProcessRegistry returns a private registry holding m and the Go runtime
// and process collectors, for a long-running process's /metrics. A private
// registry keeps whatever libraries register on the global default out of
// lock-reaper's endpoint.
func NewProcessRegistry(m *Metrics) (*prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, err
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, err
	}
	if err := m.Register(reg); err != nil {
		return nil, err
	}
	return reg, nil
}

// NewPassRegistry returns a private registry holding only m: what a one-shot
// pass pushes. The Go and process metrics of a process about to exit would
// describe nothing useful.
func NewPassRegistry(m *Metrics) (*prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	if err := m.Register(reg); err != nil {
		return nil, err
	}
	return reg, nil
}

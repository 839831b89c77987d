package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

// profiler writes the CPU and heap profiles of one phase.
type profiler struct {
	o    options
	logf func(string, ...any)
	errs []error
}

func newProfiler(o options, logf func(string, ...any)) *profiler {
	return &profiler{o: o, logf: logf}
}

// phase starts profiling when name is the chosen phase; the returned function
// stops it. The heap profile is written before (FILE.base) and after the
// phase, so that `go tool pprof -base FILE.base FILE` shows only what the
// phase allocated, not the fleet build.
func (p *profiler) phase(name string) func() {
	if name != p.o.profile || (p.o.cpuProfile == "" && p.o.memProfile == "") {
		return func() {}
	}
	var cpu *os.File
	if p.o.cpuProfile != "" {
		f, err := os.Create(p.o.cpuProfile)
		if err != nil {
			p.errs = append(p.errs, fmt.Errorf("cpu profile: %w", err))
		} else if err := pprof.StartCPUProfile(f); err != nil {
			_ = f.Close()
			p.errs = append(p.errs, fmt.Errorf("cpu profile: %w", err))
		} else {
			cpu = f
		}
	}
	if p.o.memProfile != "" {
		p.writeHeap(p.o.memProfile + ".base")
	}
	return func() {
		if cpu != nil {
			pprof.StopCPUProfile()
			if err := cpu.Close(); err != nil {
				p.errs = append(p.errs, fmt.Errorf("cpu profile: %w", err))
			}
			p.logf("cpu profile of %s in %s", name, p.o.cpuProfile)
		}
		if p.o.memProfile != "" {
			p.writeHeap(p.o.memProfile)
			p.logf("heap profiles of %s in %s and %s.base", name, p.o.memProfile, p.o.memProfile)
		}
	}
}

func (p *profiler) writeHeap(path string) {
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		p.errs = append(p.errs, fmt.Errorf("heap profile: %w", err))
		return
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		p.errs = append(p.errs, fmt.Errorf("heap profile: %w", err))
	}
	if err := f.Close(); err != nil {
		p.errs = append(p.errs, fmt.Errorf("heap profile: %w", err))
	}
}

func (p *profiler) err() error { return errors.Join(p.errs...) }

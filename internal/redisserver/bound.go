package redisserver

import (
	"io"
	"os/exec"
	"runtime"
)

// Bound is a redis-server that ends with the process that started it.
type Bound struct {
	Cmd *exec.Cmd
	// Done is closed once the server has exited.
	Done <-chan struct{}
}

// Stop ends the server and waits until it has exited.
func (b *Bound) Stop() {
	_ = b.Cmd.Process.Kill()
	<-b.Done
}

// LaunchBound is Launch for a server that must not outlive this process
// even if it crashes: on Linux the kernel kills the server when the thread
// that started it ends, so the server is started from a goroutine that
// keeps its OS thread until the server has exited.
func LaunchBound(bin, dir string, args ...string) (*Bound, string, error) {
	type launched struct {
		cmd *exec.Cmd
		log string
		err error
	}
	started := make(chan launched, 1)
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer close(done)
		cmd, log, err := launch(bin, dir, setParentDeathSignal, DrainBoundLog, args...)
		started <- launched{cmd, log, err}
		if err == nil {
			_ = cmd.Wait()
		}
	}()
	l := <-started
	if l.err != nil {
		<-done
		return nil, l.log, l.err
	}
	return &Bound{Cmd: l.cmd, Done: done}, "", nil
}

// DrainBoundLog reads the rest of a bound server's log for as long as it
// runs; a leak check names it (and LaunchBound) to let a server that lives
// as long as the process be.
func DrainBoundLog(out io.Reader) { discardLog(out) }

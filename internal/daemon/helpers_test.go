package daemon

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/testing/promtest"
	"github.com/lock-reaper/lock-reaper/reaper"
)

// runnerFunc adapts a function to Runner.
type runnerFunc func(ctx context.Context, opts reaper.Options) (*reaper.Report, error)

func (f runnerFunc) RunOnce(ctx context.Context, opts reaper.Options) (*reaper.Report, error) {
	return f(ctx, opts)
}

// gatedRunner holds each pass at its start until the test lets it go, so a
// test can look at the daemon while a pass is under way, and knows that no
// other pass completes while it looks.
type gatedRunner struct {
	inner   Runner
	entered chan struct{} // receives once per pass, when it starts
	gate    chan struct{} // each pass takes one value, or goes on once closed
}

func newGatedRunner(inner Runner) *gatedRunner {
	return &gatedRunner{inner: inner, entered: make(chan struct{}, 100), gate: make(chan struct{})}
}

func (g *gatedRunner) RunOnce(ctx context.Context, opts reaper.Options) (*reaper.Report, error) {
	g.entered <- struct{}{}
	<-g.gate
	return g.inner.RunOnce(ctx, opts)
}

// let lets the next pass go.
func (g *gatedRunner) let(t *testing.T) {
	t.Helper()
	select {
	case g.gate <- struct{}{}:
	case <-time.After(time.Minute):
		t.Fatal("no pass waiting within a minute")
	}
}

// testBundle is what a started daemon's test works with.
type testBundle struct {
	passes <-chan PassResult
	base   string // http://host:port of the daemon's listener
}

// idleRunner is a Runner whose passes find nothing, at the database's now.
var idleRunner = runnerFunc(func(context.Context, reaper.Options) (*reaper.Report, error) {
	return &reaper.Report{Mode: reaper.ModeOnce, DBNow: time.Now()}, nil
})

// noJitter takes the jitter out of every scheduled pass.
func noJitter(d *Daemon) { d.jitterN = func(time.Duration) time.Duration { return 0 } }

// start makes and starts a daemon listening on a free loopback port; the
// test stops it at cleanup, and goleak then checks nothing is left behind.
// before, when given, changes the daemon before it starts (its jitter).
func start(t *testing.T, ctx context.Context, runner Runner, cfg Config, before ...func(*Daemon)) (*Daemon, *testBundle) {
	t.Helper()
	cfg.Listen = "127.0.0.1:0"
	if cfg.Logger == nil {
		cfg.Logger = testLogger(t)
	}
	d, err := New(runner, cfg)
	require.NoError(t, err)
	for _, b := range before {
		b(d)
	}
	passes := make(chan PassResult, 1000)
	d.passDone = func(r PassResult) { passes <- r }
	require.NoError(t, d.Start(ctx))
	t.Cleanup(d.Stop)
	return d, &testBundle{passes: passes, base: "http://" + d.Addr().String()}
}

// waitPass waits for the daemon's next pass. The deadline only keeps a
// broken test from hanging; no assertion depends on timing.
func (b *testBundle) waitPass(t *testing.T) PassResult {
	t.Helper()
	select {
	case r := <-b.passes:
		return r
	case <-time.After(time.Minute):
		t.Fatal("no pass within a minute")
		return PassResult{}
	}
}

// get returns the status and body of GET path.
func (b *testBundle) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(b.base + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// samples are scraped metric values keyed by name{label="value",...} with
// the labels sorted.
type samples map[string]float64

func (b *testBundle) scrape(t *testing.T) samples {
	t.Helper()
	return promtest.Scrape(t, b.base+"/metrics")
}

// testLogger sends the daemon's logs to the test log.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// flakyProxy forwards TCP connections to a real server and can cut them:
// while it is down it drops every connection, the open ones included, as a
// Redis that went away would.
type flakyProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func newFlakyProxy(t *testing.T, target string) *flakyProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &flakyProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *flakyProxy) addr() string { return p.ln.Addr().String() }

func (p *flakyProxy) setDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
	if down {
		for c := range p.conns {
			_ = c.Close()
		}
	}
}

func (p *flakyProxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.down {
			p.mu.Unlock()
			_ = client.Close()
			continue
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			_ = client.Close()
			continue
		}
		p.conns[client], p.conns[server] = struct{}{}, struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(client, server)
		go p.pipe(server, client)
	}
}

func (p *flakyProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

func (p *flakyProxy) close() {
	_ = p.ln.Close()
	p.setDown(true)
	p.wg.Wait()
}

func goVersion() string { return runtime.Version() }

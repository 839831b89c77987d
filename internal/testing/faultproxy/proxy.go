// Package faultproxy is a TCP proxy for tests that injects network faults
// between a client and a real server: it refuses new connections, cuts the
// open ones, stalls (holds every byte in flight) and delays, on demand.
//
// It listens on 127.0.0.1:0 and forwards every accepted connection to one
// target. Point a client at Addr (go-redis Options.Addr, a postgres:// URL's
// host:port) or dial through Dial (go-redis Options.Dialer, pgx
// ConnConfig.DialFunc).
//
// Bytes held by a stall are delivered when it ends, in order, unless the
// connection is closed or cut meanwhile: then they are dropped, as a network
// that lost them would, so a request a client gave up on never reaches the
// server later.
package faultproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy forwards TCP connections to a target and injects faults into them.
type Proxy struct {
	target string
	ln     net.Listener
	done   chan struct{}
	wg     sync.WaitGroup

	mu    sync.Mutex
	links map[*link]struct{}
	// refuse makes new connections fail: they are reset as soon as accepted.
	refuse bool
	// resume is closed when forwarding may go on; a stall replaces it with an
	// open channel.
	resume chan struct{}
	// stallTimer ends a stall given a duration.
	stallTimer *time.Timer
	// held is closed the first time a stall holds back a byte, and renewed
	// by every stall.
	held     chan struct{}
	heldOnce *sync.Once
	delay    time.Duration
	// drop is the armed DropReplyAfter fault, nil when none is.
	drop *dropFault

	accepted atomic.Int64
	closed   atomic.Bool
}

// Start listens on 127.0.0.1:0 and forwards to target (host:port).
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	resume := make(chan struct{})
	close(resume)
	p := &Proxy{
		target: target, ln: ln, done: make(chan struct{}), links: map[*link]struct{}{},
		resume: resume, held: make(chan struct{}), heldOnce: &sync.Once{},
	}
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Host is the proxy's IP address.
func (p *Proxy) Host() string { return p.ln.Addr().(*net.TCPAddr).IP.String() }

// Port is the proxy's port.
func (p *Proxy) Port() int { return p.ln.Addr().(*net.TCPAddr).Port }

// Dial connects to the proxy whatever address it is given, so it can stand
// in for a client library's dialer (go-redis Options.Dialer, pgx DialFunc).
func (p *Proxy) Dial(ctx context.Context, _, _ string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", p.Addr())
}

// Accepted counts the connections the proxy accepted, refused ones included.
func (p *Proxy) Accepted() int { return int(p.accepted.Load()) }

// Open counts the connections being forwarded now.
func (p *Proxy) Open() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.links)
}

// Close stops listening, cuts every connection and waits for the proxy's
// goroutines to end. It may be called more than once.
func (p *Proxy) Close() {
	if p.closed.Swap(true) {
		return
	}
	close(p.done)
	_ = p.ln.Close()
	p.Resume()
	p.Cut()
	p.wg.Wait()
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		p.accepted.Add(1)
		p.mu.Lock()
		refuse := p.refuse
		p.mu.Unlock()
		if refuse {
			reset(c)
			continue
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

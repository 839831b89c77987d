package faultproxy

import (
	"sync"
	"time"
)

// The faults a test turns on and off: refused and cut connections, stalls
// and delays. DropReplyAfter, a one-shot fault, is in drop.go.

// Refuse makes every new connection fail: it is reset as soon as it is
// accepted, so the client sees its server go away before any reply.
// Connections already open are not affected; Cut them too for an outage.
func (p *Proxy) Refuse() {
	p.mu.Lock()
	p.refuse = true
	p.mu.Unlock()
}

// Admit undoes Refuse.
func (p *Proxy) Admit() {
	p.mu.Lock()
	p.refuse = false
	p.mu.Unlock()
}

// Cut resets every open connection; bytes held by a stall are dropped.
func (p *Proxy) Cut() {
	p.mu.Lock()
	links := make([]*link, 0, len(p.links))
	for l := range p.links {
		links = append(links, l)
	}
	p.mu.Unlock()
	for _, l := range links {
		l.close(true)
	}
}

// Stall stops forwarding in both directions on every connection, open or
// new, for d, or until Resume when d <= 0. Connections stay open; what they
// send is held.
func (p *Proxy) Stall(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopStallTimer()
	select {
	case <-p.resume:
		p.resume = make(chan struct{})
		p.held, p.heldOnce = make(chan struct{}), &sync.Once{}
	default: // already stalled
	}
	if d > 0 {
		p.stallTimer = time.AfterFunc(d, p.Resume)
	}
}

// Resume ends a stall: the held bytes are delivered in order.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopStallTimer()
	select {
	case <-p.resume:
	default:
		close(p.resume)
	}
}

// stopStallTimer cancels the Resume a timed Stall scheduled. Called under mu.
func (p *Proxy) stopStallTimer() {
	if p.stallTimer != nil {
		p.stallTimer.Stop()
		p.stallTimer = nil
	}
}

// Held is closed once the current (or next) stall has held back a byte: a
// client is then waiting on the stalled network.
func (p *Proxy) Held() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}

// SetDelay delays every forwarded chunk by d in each direction (0 for none).
func (p *Proxy) SetDelay(d time.Duration) {
	p.mu.Lock()
	p.delay = max(d, 0)
	p.mu.Unlock()
}

func (p *Proxy) stalled() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.resume:
		return false
	default:
		return true
	}
}

// waitForward waits out a stall and the delay; false means the link ended.
func (p *Proxy) waitForward(l *link) bool {
	p.mu.Lock()
	resume, delay, held, once := p.resume, p.delay, p.held, p.heldOnce
	p.mu.Unlock()
	select {
	case <-resume:
	default:
		once.Do(func() { close(held) })
		select {
		case <-resume:
		case <-l.done:
			return false
		}
	}
	if delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-l.done:
			return false
		}
	}
	select {
	case <-l.done:
		return false
	default:
		return true
	}
}

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
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// chunkSize is the largest read forwarded in one piece.
const chunkSize = 32 << 10

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
	if p.stallTimer != nil {
		p.stallTimer.Stop()
		p.stallTimer = nil
	}
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
	if p.stallTimer != nil {
		p.stallTimer.Stop()
		p.stallTimer = nil
	}
	select {
	case <-p.resume:
	default:
		close(p.resume)
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

// serve connects a client to the target and forwards until either side ends.
func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	d := net.Dialer{Timeout: 5 * time.Second}
	server, err := d.Dial("tcp", p.target)
	if err != nil {
		reset(client)
		return
	}
	l := &link{client: client, server: server, done: make(chan struct{})}
	p.mu.Lock()
	if p.closed.Load() {
		p.mu.Unlock()
		l.close(true)
		return
	}
	p.links[l] = struct{}{}
	p.mu.Unlock()

	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.pipe(l, client, server, true) }()
	go func() { defer wg.Done(); p.pipe(l, server, client, false) }()
	wg.Wait()
	p.mu.Lock()
	delete(p.links, l)
	p.mu.Unlock()
}

// pipe forwards one direction. A reader goroutine keeps reading while the
// writer waits out a stall, so that the link notices when an end closes
// during the stall and drops what it held. Outside a stall, what a closing
// end sent last (a server's goodbye) is still delivered before the link ends.
func (p *Proxy) pipe(l *link, from, to net.Conn, toServer bool) {
	chunks := make(chan []byte, 64)
	go func() {
		defer close(chunks)
		for {
			buf := make([]byte, chunkSize)
			n, err := from.Read(buf)
			if n > 0 {
				select {
				case chunks <- buf[:n]:
				case <-l.done:
					return
				}
			}
			if err != nil {
				if p.stalled() {
					l.close(false)
				}
				return
			}
		}
	}()
	for chunk := range chunks {
		if !p.waitForward(l) {
			return
		}
		if !toServer && l.swallow.Load() {
			// The server answered the request DropReplyAfter waited for:
			// the answer is lost with the connection.
			l.close(true)
			close(l.dropped)
			return
		}
		if toServer {
			p.watchDrop(l, chunk)
		}
		if _, err := to.Write(chunk); err != nil {
			break
		}
	}
	l.close(false)
}

// dropFault is an armed DropReplyAfter: the byte strings a client must
// send in order, and the channel closed once the reply was dropped.
type dropFault struct {
	seq   [][]byte
	fired chan struct{}
}

// DropReplyAfter arms a one-shot fault. On the first connection whose client
// sends chunks containing each of seq in order, the chunk with the last one
// still reaches the server; the server's reply to it is thrown away and the
// connection is then reset at both ends, as if it broke the moment the
// request was sent: the request took effect, its answer never came. The
// channel is closed once the reply was dropped.
func (p *Proxy) DropReplyAfter(seq ...[]byte) <-chan struct{} {
	d := &dropFault{seq: seq, fired: make(chan struct{})}
	p.mu.Lock()
	p.drop = d
	p.mu.Unlock()
	return d.fired
}

// watchDrop follows a chunk the client sends against the armed fault, and
// arms the link to drop the reply once the whole sequence was sent.
func (p *Proxy) watchDrop(l *link, chunk []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	d := p.drop
	if d == nil {
		return
	}
	if l.dropOf != d {
		l.dropOf, l.dropAt = d, 0
	}
	for l.dropAt < len(d.seq) && bytes.Contains(chunk, d.seq[l.dropAt]) {
		l.dropAt++
	}
	if l.dropAt == len(d.seq) {
		p.drop = nil
		l.dropped = d.fired
		l.swallow.Store(true)
	}
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

// link is one proxied connection: a client and its server connection.
type link struct {
	client, server net.Conn
	once           sync.Once
	done           chan struct{}
	// dropOf and dropAt are how far this link's client has come in the
	// sequence of the armed DropReplyAfter; swallow says the server's next
	// reply is to be dropped, and dropped is closed when it was.
	dropOf  *dropFault
	dropAt  int
	swallow atomic.Bool
	dropped chan struct{}
}

// close ends the link; hard resets the client instead of a clean close.
func (l *link) close(hard bool) {
	l.once.Do(func() {
		close(l.done)
		if hard {
			reset(l.client)
			reset(l.server)
			return
		}
		_ = l.client.Close()
		_ = l.server.Close()
	})
}

// reset closes a connection with an RST rather than a FIN, as a crashed or
// unreachable peer would.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

package faultproxy

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Forwarding one accepted connection to the target, through the faults.

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

// chunkSize is the largest read forwarded in one piece.
const chunkSize = 32 << 10

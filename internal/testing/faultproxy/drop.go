package faultproxy

import "bytes"

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

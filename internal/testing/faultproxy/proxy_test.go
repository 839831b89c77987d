package faultproxy

import (
	"bufio"
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// echoServer answers every line with the same line and records what it
// received, so a test can tell whether held bytes ever reached it.
type echoServer struct {
	ln       net.Listener
	mu       sync.Mutex
	received []string
	got      chan string
}

func newEchoServer(t *testing.T) *echoServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &echoServer{ln: ln, got: make(chan string, 100)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					s.mu.Lock()
					s.received = append(s.received, line)
					s.mu.Unlock()
					s.got <- line
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() { _ = ln.Close() })
	return s
}

func (s *echoServer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.received)
}

func startProxy(t *testing.T, target string) *Proxy {
	t.Helper()
	p, err := Start(target)
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return p
}

// dial connects a client through p; the connection is closed when the test
// ends, if the test has not closed it.
func dial(t *testing.T, p *Proxy) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func roundTrip(t *testing.T, c net.Conn, r *bufio.Reader, line string) {
	t.Helper()
	_, err := c.Write([]byte(line))
	require.NoError(t, err)
	got, err := r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, line, got)
}

func TestForwards(t *testing.T) {
	t.Parallel()
	s := newEchoServer(t)
	p := startProxy(t, s.ln.Addr().String())
	c, err := p.Dial(context.Background(), "tcp", "ignored:1")
	require.NoError(t, err)
	defer c.Close()
	r := bufio.NewReader(c)
	roundTrip(t, c, r, "hello\n")
	require.Equal(t, 1, p.Accepted())
	require.Equal(t, 1, p.Open())
	require.Equal(t, "127.0.0.1", p.Host())
	require.NotZero(t, p.Port())
}

func TestRefuseAndAdmit(t *testing.T) {
	t.Parallel()
	s := newEchoServer(t)
	p := startProxy(t, s.ln.Addr().String())
	p.Refuse()
	// The reset may come during the handshake or at the first read.
	if c, err := net.Dial("tcp", p.Addr()); err == nil {
		_, err = bufio.NewReader(c).ReadString('\n')
		require.Error(t, err)
		c.Close()
	}

	p.Admit()
	c := dial(t, p)
	roundTrip(t, c, bufio.NewReader(c), "again\n")
}

func TestCutResetsOpenConnections(t *testing.T) {
	t.Parallel()
	s := newEchoServer(t)
	p := startProxy(t, s.ln.Addr().String())
	c := dial(t, p)
	r := bufio.NewReader(c)
	roundTrip(t, c, r, "one\n")
	p.Cut()
	_, err := r.ReadString('\n')
	require.Error(t, err)
}

func TestStallHoldsThenDelivers(t *testing.T) {
	t.Parallel()
	s := newEchoServer(t)
	p := startProxy(t, s.ln.Addr().String())
	c := dial(t, p)
	r := bufio.NewReader(c)
	roundTrip(t, c, r, "before\n")

	p.Stall(0)
	_, err := c.Write([]byte("held\n"))
	require.NoError(t, err)
	<-p.Held()
	require.Equal(t, 1, s.count(), "nothing reaches the server during a stall")

	p.Resume()
	got, err := r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "held\n", got)
}

func TestStallWithDurationEndsByItself(t *testing.T) {
	t.Parallel()
	s := newEchoServer(t)
	p := startProxy(t, s.ln.Addr().String())
	p.Stall(50 * time.Millisecond)
	c := dial(t, p)
	roundTrip(t, c, bufio.NewReader(c), "late\n")
}

// A client that gives up during a stall must not have its request delivered
// afterwards: the server never sees it.
func TestStallDropsWhatAClosedClientSent(t *testing.T) {
	t.Parallel()
	s := newEchoServer(t)
	p := startProxy(t, s.ln.Addr().String())
	c := dial(t, p)
	r := bufio.NewReader(c)
	roundTrip(t, c, r, "first\n")
	<-s.got

	p.Stall(0)
	_, err := c.Write([]byte("abandoned\n"))
	require.NoError(t, err)
	<-p.Held()
	require.NoError(t, c.Close())
	// The proxy notices the close and ends the link.
	for p.Open() > 0 {
		time.Sleep(time.Millisecond)
	}
	p.Resume()

	// A fresh connection's line is the next thing the server sees.
	c2 := dial(t, p)
	roundTrip(t, c2, bufio.NewReader(c2), "fresh\n")
	require.Equal(t, "fresh\n", <-s.got)
	require.Equal(t, 2, s.count())
}

func TestDelay(t *testing.T) {
	t.Parallel()
	s := newEchoServer(t)
	p := startProxy(t, s.ln.Addr().String())
	p.SetDelay(20 * time.Millisecond)
	c := dial(t, p)
	start := time.Now()
	roundTrip(t, c, bufio.NewReader(c), "slow\n")
	// Two hops of at least the delay each; a lower bound only, never an upper one.
	require.GreaterOrEqual(t, time.Since(start), 40*time.Millisecond)
}

func TestCloseIsIdempotentAndEndsLinks(t *testing.T) {
	t.Parallel()
	s := newEchoServer(t)
	p, err := Start(s.ln.Addr().String())
	require.NoError(t, err)
	c := dial(t, p)
	roundTrip(t, c, bufio.NewReader(c), "x\n")
	p.Stall(0)
	p.Close()
	p.Close()
	_, err = io.ReadAll(c) // returns: the client sees its connection end
	require.Error(t, err, "reset, not a clean end")
	_, err = net.Dial("tcp", p.Addr())
	require.Error(t, err)
}

// TestDropReplyAfter: the request that completes the sequence reaches the
// server, its reply never reaches the client, and the connection ends; the
// fault fires once, on that connection only.
func TestDropReplyAfter(t *testing.T) {
	t.Parallel()
	s := newEchoServer(t)
	p := startProxy(t, s.ln.Addr().String())
	other := dial(t, p)
	otherR := bufio.NewReader(other)
	c := dial(t, p)
	r := bufio.NewReader(c)

	fired := p.DropReplyAfter([]byte("update"), []byte("commit"))
	roundTrip(t, c, r, "commit before\n")
	roundTrip(t, c, r, "update\n")
	roundTrip(t, other, otherR, "commit elsewhere\n")
	_, err := c.Write([]byte("commit\n"))
	require.NoError(t, err)
	_, err = r.ReadString('\n')
	require.Error(t, err, "the reply is lost with the connection")
	<-fired
	s.mu.Lock()
	require.Contains(t, s.received, "commit\n", "the request reached the server")
	s.mu.Unlock()
	roundTrip(t, other, otherR, "update\n")
	roundTrip(t, other, otherR, "commit\n")
}

package config

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// A redis.url whose scheme does not match the server fails without a word
// of TLS: a rediss:// URL to a plain Redis waits out redis.timeout (the
// server reads the handshake as the start of an inline command and waits
// for its end), and a redis:// URL to a Redis that speaks only TLS reads
// EOF. The dialer here tells both apart quickly and says what to change:
//   - a TLS handshake that has no answer after tlsStallProbe is checked on a
//     second connection with a plain PING: a reply in Redis's protocol means
//     the server speaks no TLS. A TLS server never answers PING so, which
//     keeps a slow handshake from being taken for a plain server;
//   - a plain connection whose server answers with a TLS record (an alert
//     or a handshake), or closes before its first byte while a TLS
//     handshake on a second connection gets an answer, is a TLS server.

// tlsStallProbe is how long a TLS handshake may go unanswered before the
// server is asked whether it speaks plain Redis.
const tlsStallProbe = 250 * time.Millisecond

// redisDialer dials as go-redis does (with o's TLS settings and dial
// timeout), naming a TLS mismatch.
func redisDialer(o *redis.Options) func(context.Context, string, string) (net.Conn, error) {
	tlsConfig, timeout := o.TLSConfig, o.DialTimeout
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		d := &net.Dialer{Timeout: timeout, KeepAlive: 5 * time.Minute}
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if tlsConfig == nil {
			if network == "unix" {
				return conn, nil
			}
			return &plainConn{Conn: conn, network: network, addr: addr, timeout: timeout}, nil
		}
		return handshake(ctx, conn, tlsConfig, network, addr, timeout)
	}
}

// handshake runs the TLS handshake on conn, and asks the server whether it
// speaks plain Redis when the handshake stalls.
func handshake(ctx context.Context, conn net.Conn, base *tls.Config, network, addr string, timeout time.Duration) (net.Conn, error) {
	cfg := base.Clone()
	if cfg.ServerName == "" {
		if host, _, err := net.SplitHostPort(addr); err == nil {
			cfg.ServerName = host
		}
	}
	tc := tls.Client(conn, cfg)
	hctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- tc.HandshakeContext(hctx) }()
	stall := time.NewTimer(tlsStallProbe)
	defer stall.Stop()
	var plain chan bool
	for {
		select {
		case err := <-done:
			if err != nil {
				_ = conn.Close()
				if isNotTLSRecord(err) {
					return nil, noTLSError(addr)
				}
				return nil, err
			}
			return tc, nil
		case <-stall.C:
			plain = make(chan bool, 1)
			go func() { plain <- speaksPlainRedis(hctx, network, addr) }()
		case isPlain := <-plain:
			plain = nil
			if isPlain {
				cancel()
				<-done
				_ = conn.Close()
				return nil, noTLSError(addr)
			}
		}
	}
}

// isNotTLSRecord says a handshake got an answer that is no TLS record:
// Go's TLS client names it so.
func isNotTLSRecord(err error) bool {
	var re tls.RecordHeaderError
	return errors.As(err, &re)
}

func noTLSError(addr string) error {
	return fmt.Errorf("the server at %s did not answer a TLS handshake and speaks plain Redis: use a redis:// (or redis+sentinel://) redis.url (rediss:// is for a Redis with TLS on), or turn TLS on in Redis", addr)
}

func tlsOnlyError(addr string) error {
	return fmt.Errorf("the server at %s speaks TLS: use a rediss:// (or rediss+sentinel://) redis.url (with redis.tls_ca_file for a private CA)", addr)
}

// speaksPlainRedis says the server at addr answers a plain PING in
// Redis's protocol (+PONG, or an error such as -NOAUTH).
func speaksPlainRedis(ctx context.Context, network, addr string) bool {
	conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return false
	}
	defer func() { _ = conn.Close() }()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	b, err := bufio.NewReader(conn).ReadByte()
	return err == nil && (b == '+' || b == '-')
}

// speaksTLS says the server at addr answers a TLS handshake: its
// certificate is not checked, only that an answer in TLS came.
func speaksTLS(network, addr string, timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return false
	}
	defer func() { _ = conn.Close() }()
	host, _, _ := net.SplitHostPort(addr)
	// Only whether the server answers in TLS is looked at: nothing is sent
	// over this connection.
	tc := tls.Client(conn, &tls.Config{ServerName: host, InsecureSkipVerify: true}) //nolint:gosec
	err = tc.HandshakeContext(ctx)
	var alert tls.AlertError
	return err == nil || errors.As(err, &alert)
}

// plainConn is a connection without TLS that names a server answering in
// TLS, on its first read.
type plainConn struct {
	net.Conn
	network, addr string
	timeout       time.Duration
	answered      bool
}

// TLS record types a server speaking TLS answers a plain command with.
const (
	tlsRecordAlert     = 0x15
	tlsRecordHandshake = 0x16
)

func (c *plainConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if c.answered {
		return n, err
	}
	switch {
	case n > 0 && (b[0] == tlsRecordAlert || b[0] == tlsRecordHandshake):
		return 0, tlsOnlyError(c.addr)
	case n > 0:
		c.answered = true
	case errors.Is(err, io.EOF) && speaksTLS(c.network, c.addr, min(c.timeout, time.Second)):
		return 0, tlsOnlyError(c.addr)
	}
	return n, err
}

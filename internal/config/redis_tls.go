package config

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// redisTLS returns the TLS configuration of the Redis connection: base (what
// a rediss:// URL gave, nil for redis://) with redis.tls_ca_file as the only
// trusted roots and redis.tls_cert_file and redis.tls_key_file as the client
// certificate. The files are read here, at start: a missing or bad file is a
// configuration error naming its key, not a failure of every pass.
func redisTLS(c Config, base *tls.Config) (*tls.Config, error) {
	r := c.Redis
	if r.TLSCAFile == "" && r.TLSCertFile == "" && r.TLSKeyFile == "" {
		return base, nil
	}
	if base == nil {
		return nil, errors.New("redis.tls_ca_file, redis.tls_cert_file and redis.tls_key_file need a rediss:// redis.url (rediss+sentinel:// for Sentinel)")
	}
	tc := base.Clone()
	if r.TLSCAFile != "" {
		pem, err := os.ReadFile(r.TLSCAFile)
		if err != nil {
			return nil, fmt.Errorf("redis.tls_ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("redis.tls_ca_file: %s holds no PEM certificate", r.TLSCAFile)
		}
		tc.RootCAs = pool
	}
	if (r.TLSCertFile == "") != (r.TLSKeyFile == "") {
		return nil, fmt.Errorf("redis.tls_cert_file and redis.tls_key_file: %w", errNotBoth)
	}
	if r.TLSCertFile != "" {
		cert, err := tls.LoadX509KeyPair(r.TLSCertFile, r.TLSKeyFile)
		if err != nil {
			// The error names the files, never their content.
			return nil, fmt.Errorf("redis.tls_cert_file and redis.tls_key_file: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

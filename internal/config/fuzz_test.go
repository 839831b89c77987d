package config

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

// The fuzz targets check two things only: loading never panics, and an error
// never quotes "secret" when that word appears in the input only as a
// password, that is, only where redaction hides it.

const marker = "secret"

func FuzzLoadYAML(f *testing.F) {
	for _, seed := range []string{
		"",
		"redis:\n  url: redis://:secret@h:6379/0\n",
		"redis:\n  url: redis://:secret@h:bad/0\n  scan_count: x\n",
		"database:\n  url: postgres://u:secret@h:port/db\n",
		"database:\n  url: host=h password=secret port=x\n",
		"redis:\n  url: redis+sentinel://:secret@s1,s2:26380/0?master_name=m&sentinel_password=secret\n",
		"pushgateway_url: http://u:secret@push:bad\n",
		"heartbeat_grace: abc\nlog: {format: yaml}\nmax_dead_fraction: .nan\n",
		"x: &a redis://:secret@h:bad\nredis: {url: *a}\n",
		"redis: [1, 2]\n---\nfoo: bar\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c := Default()
		var err error
		if errs := applyYAML(&c, "config file fuzz.yaml", data); len(errs) > 0 {
			err = errors.Join(errs...)
		} else {
			err = c.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), marker) {
			return
		}
		if markerOnlyInPasswords(data, err) {
			t.Fatalf("error quotes a password: %v", err)
		}
	})
}

// markerOnlyInPasswords says whether every "secret" of the YAML input sits
// in a password of a secret setting's value. Input that does not decode is
// judged by the error: yaml.v3's syntax errors quote nothing but anchor names.
func markerOnlyInPasswords(data []byte, err error) bool {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil {
		return !strings.Contains(err.Error(), "anchor")
	}
	hidden, outside := 0, 0
	var walk func(n *yaml.Node, key string, depth int)
	walk = func(n *yaml.Node, key string, depth int) {
		if depth > 100 {
			outside++ // too deep to judge: do not assert
			return
		}
		outside += strings.Count(n.Anchor, marker) + strings.Count(n.Tag, marker)
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			walk(n.Alias, key, depth+1)
			return
		}
		if n.Kind == yaml.ScalarNode {
			if s := settingByKey[key]; s != nil && s.secret {
				if strings.Contains(redactSecret(n.Value), marker) {
					outside++
				} else {
					hidden += strings.Count(n.Value, marker)
				}
				return
			}
			outside += strings.Count(n.Value, marker)
			return
		}
		for i, child := range n.Content {
			childKey := ""
			if n.Kind == yaml.MappingNode && i%2 == 1 {
				childKey = n.Content[i-1].Value
				if key != "" {
					childKey = key + "." + childKey
				}
			}
			walk(child, childKey, depth+1)
		}
	}
	walk(&doc, "", 0)
	return outside == 0 && hidden > 0
}

func FuzzLoadEnv(f *testing.F) {
	index := func(key string) uint8 {
		for i := range settings {
			if settings[i].key == key {
				return uint8(i)
			}
		}
		panic(key)
	}
	f.Add(index("redis.url"), "redis://:secret@h:bad/0")
	f.Add(index("redis.url"), "rediss+sentinel://u:secret@s1:x,s2/0?master_name=m")
	f.Add(index("redis.url"), "redis://:secret/x@h/0")
	f.Add(index("database.url"), "postgres://u:secret@h:port/db")
	f.Add(index("database.url"), "host=h password='secret port=5432")
	f.Add(index("pushgateway_url"), "ftp://u:secret@push")
	f.Add(index("heartbeat_grace"), "abc")
	f.Add(index("max_dead_fraction"), "NaN")
	f.Add(index("schedule"), "@every -1s")
	f.Fuzz(func(t *testing.T, i uint8, val string) {
		s := &settings[int(i)%len(settings)]
		fs := pflag.NewFlagSet("fuzz", pflag.ContinueOnError)
		fs.SetOutput(io.Discard)
		_, err := Register(fs).Load(env{s.env(): val}.lookup)
		if err == nil || !strings.Contains(err.Error(), marker) {
			return
		}
		if s.secret && strings.Contains(val, marker) && !strings.Contains(redactSecret(val), marker) {
			t.Fatalf("%s: error quotes a password: %v", s.env(), err)
		}
	})
}

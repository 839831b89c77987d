package config

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/lock-reaper/lock-reaper/internal/memlimit"
	"github.com/lock-reaper/lock-reaper/internal/nearest"
)

// envPrefix is what every variable of lock-reaper starts with.
const envPrefix = "REAPER_"

// testEnvPrefixes name the variables of the test suite and the benchmark
// (REAPER_TEST_REDIS_URL, REAPER_TEST_DATABASE_URL, REAPER_E2E_SEED), which
// the program itself never reads.
var testEnvPrefixes = []string{"REAPER_TEST_", "REAPER_E2E_"}

func isTestEnv(name string) bool {
	for _, p := range testEnvPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// KnownEnv is every REAPER_* variable the program reads: each setting of the
// table, as NAME and as NAME_FILE, REAPER_CONFIG and REAPER_MEMORY_LIMIT
// (read by main, before the configuration). It grows with the table, so a
// new key is never reported as unknown.
func KnownEnv() []string {
	names := []string{configEnv, memlimit.Env}
	for i := range settings {
		names = append(names, settings[i].env(), settings[i].env()+"_FILE")
	}
	sort.Strings(names)
	return names
}

// serviceLink matches the variables Kubernetes injects for every Service of
// the namespace (enableServiceLinks): a Service named reaper-... gives
// REAPER_..._SERVICE_HOST, REAPER_..._PORT=tcp://... and so on. They are no
// settings of ours and must not stop the program.
var serviceLink = regexp.MustCompile(`_(SERVICE_HOST|SERVICE_PORT(_[A-Z0-9_]+)?|PORT_[0-9]+_(TCP|UDP|SCTP)(_ADDR|_PORT|_PROTO)?)$`)

func isServiceLink(name, value string) bool {
	if serviceLink.MatchString(name) {
		return true
	}
	return strings.HasSuffix(name, "_PORT") && (strings.HasPrefix(value, "tcp://") || strings.HasPrefix(value, "udp://") || strings.HasPrefix(value, "sctp://"))
}

// CheckEnviron reports every REAPER_* variable of environ (NAME=VALUE
// entries, as os.Environ gives them) that the program does not read, each
// with the closest known name: a misspelt variable must be an error, not a
// setting silently left at its default.
func CheckEnviron(environ []string) error {
	known := map[string]bool{}
	for _, n := range KnownEnv() {
		known[n] = true
	}
	var unknown []string
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, envPrefix) || known[name] || isTestEnv(name) || isServiceLink(name, value) {
			continue
		}
		unknown = append(unknown, name)
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	msgs := make([]string, len(unknown))
	for i, name := range unknown {
		msgs[i] = fmt.Sprintf("unknown environment variable %s", name)
		if near := closest(name, KnownEnv()); near != "" {
			msgs[i] += fmt.Sprintf(" (did you mean %s?)", near)
		}
	}
	return fmt.Errorf("%s; `lock-reaper config -h` lists every setting", strings.Join(msgs, "; "))
}

// closest is the candidate nearest to name, or "" when none is near enough
// to be a plausible misspelling.
func closest(name string, candidates []string) string {
	if near := nearest.Names(name, candidates, 1, false); len(near) > 0 {
		return near[0]
	}
	return ""
}

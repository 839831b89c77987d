package config

import (
	"strings"
	"testing"
)

func TestCheckEnvironNamesTheClosestKnownVariable(t *testing.T) {
	err := CheckEnviron([]string{"PATH=/bin", "REAPER_REDIS_ULR=redis://x:6379/0", "REAPER_LOG_LEVEL=debug"})
	if err == nil || !strings.Contains(err.Error(), "REAPER_REDIS_ULR") || !strings.Contains(err.Error(), "did you mean REAPER_REDIS_URL?") {
		t.Fatalf("got %v", err)
	}
	if err := CheckEnviron([]string{"REAPER_ZZZZZZZZZZZZZZZZZZZZZZZZZZZZZ=1"}); err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Fatalf("a name near nothing: %v", err)
	}
}

func TestCheckEnvironAcceptsEveryDocumentedVariable(t *testing.T) {
	env := []string{
		"REAPER_CONFIG=/etc/reaper.yaml", "REAPER_TEST_REDIS_URL=redis://127.0.0.1:1/0",
		"REAPER_TEST_DATABASE_URL=postgres://x", "REAPER_TEST_ANYTHING_ELSE=1", "REAPER_E2E_SEED=7",
		// Kubernetes service links of a Service named reaper-metrics.
		"REAPER_METRICS_SERVICE_HOST=10.0.0.1", "REAPER_METRICS_SERVICE_PORT=9090",
		"REAPER_METRICS_SERVICE_PORT_HTTP=9090", "REAPER_METRICS_PORT=tcp://10.0.0.1:9090",
		"REAPER_METRICS_PORT_9090_TCP=tcp://10.0.0.1:9090", "REAPER_METRICS_PORT_9090_TCP_ADDR=10.0.0.1",
	}
	// Every key of the table, as NAME and NAME_FILE: keys added later are
	// known without a hand list.
	for i := range settings {
		env = append(env, settings[i].env()+"=x", settings[i].env()+"_FILE=/x")
	}
	if err := CheckEnviron(env); err != nil {
		t.Fatal(err)
	}
}

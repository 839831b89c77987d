package deploy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
)

// validate runs the chart's values schema the way install does: on the
// user's values coalesced with values.yaml.
func validate(t *testing.T, vals map[string]any) error {
	t.Helper()
	ch := loadChart(t)
	coalesced, err := chartutil.CoalesceValues(ch, vals)
	if err != nil {
		t.Fatalf("coalesce values: %v", err)
	}
	return chartutil.ValidateAgainstSchema(ch, coalesced)
}

func TestSchemaRejectsUnknownKeys(t *testing.T) {
	t.Parallel()
	cases := []struct {
		key  string // the unknown key, as the error names it
		vals map[string]any
	}{
		{"replicas", map[string]any{"replicas": 2}},
		{"schedul", map[string]any{"cronjob": map[string]any{"schedul": "*/5 * * * *"}}},
		{"heartbeat_grase", map[string]any{"config": map[string]any{"heartbeat_grase": "30s"}}},
		{"url", map[string]any{"config": map[string]any{"redis": map[string]any{"url": "redis://x"}}}},
		{"url", map[string]any{"config": map[string]any{"database": map[string]any{"url": "postgres://x"}}}},
		{"listen", map[string]any{"config": map[string]any{"listen": ":8080"}}},
		{"namespace", map[string]any{"serviceMonitor": map[string]any{"namespace": "monitoring"}}},
		{"gpu", map[string]any{"resources": map[string]any{"limits": map[string]any{"gpu": 1}}}},
		{"tag", map[string]any{"tolerations": []any{map[string]any{"key": "a", "tag": "b"}}}},
		{"extra", map[string]any{"image": map[string]any{"extra": true}}},
	}
	for _, tc := range cases {
		err := validate(t, withDSNs(tc.vals))
		if err == nil {
			t.Errorf("%s: the schema accepted an unknown key", toJSON(tc.vals))
			continue
		}
		if !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%s: the error does not name %q: %v", toJSON(tc.vals), tc.key, err)
		}
	}
}

func TestSchemaRejectsBadValues(t *testing.T) {
	t.Parallel()
	for _, vals := range []map[string]any{
		{"mode": "daemonset"},
		{"config": map[string]any{"lost_running": "deleted"}},
		{"config": map[string]any{"orphaned_waiting": "drop"}},
		{"config": map[string]any{"heartbeat_grace": "30 seconds"}},
		{"config": map[string]any{"max_dead_fraction": 1.5}},
		{"config": map[string]any{"log": map[string]any{"format": "xml"}}},
		{"cronjob": map[string]any{"activeDeadlineSeconds": 0}},
		{"metrics": map[string]any{"port": 70000}},
		{"image": map[string]any{"digest": "latest"}},
	} {
		if err := validate(t, withDSNs(vals)); err == nil {
			t.Errorf("%s: the schema accepted it", toJSON(vals))
		}
	}
	for _, file := range append([]string{"values.yaml"}, exampleFiles(t)...) {
		if err := validate(t, readValuesFile(t, file)); err != nil {
			t.Errorf("%s does not validate: %v", file, err)
		}
	}
}

// TestSchemaIsClosed walks values.schema.json: every object must say what
// else it allows, and an object with listed properties must allow nothing
// else. Maps of strings (labels, annotations) list none and allow strings.
func TestSchemaIsClosed(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join(chartDir, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatalf("values.schema.json: %v", err)
	}
	// global is Helm's: a parent chart's globals reach every subchart. The
	// others are Kubernetes API types passed through as they are (affinity
	// terms, selectors, volume sources, env sources): the API server checks
	// them at install, and the render tests decode them strictly.
	open := map[string]bool{
		"/properties/global":                                                   true,
		"/properties/affinity/properties/nodeAffinity":                         true,
		"/properties/affinity/properties/podAffinity":                          true,
		"/properties/affinity/properties/podAntiAffinity":                      true,
		"/properties/topologySpreadConstraints/items/properties/labelSelector": true,
		"/properties/extraVolumes/items":                                       true,
		"/properties/extraEnv/items/properties/valueFrom":                      true,
	}

	var walk func(at string, s map[string]any)
	walk = func(at string, s map[string]any) {
		isObject := s["type"] == "object"
		if types, ok := s["type"].([]any); ok {
			isObject = slices.Contains(types, any("object"))
		}
		additional, hasAdditional := s["additionalProperties"]
		_, hasProps := s["properties"]
		switch {
		case open[at]:
		case isObject && !hasAdditional:
			t.Errorf("schema %s: an object without additionalProperties accepts any key", at)
		case hasProps && additional != false:
			t.Errorf("schema %s: lists properties but allows others (additionalProperties %v)", at, additional)
		case hasAdditional && additional != false:
			if sub, ok := additional.(map[string]any); !ok || sub["type"] != "string" {
				t.Errorf("schema %s: additionalProperties %v, want false or a map of strings", at, additional)
			}
		}
		if props, ok := s["properties"].(map[string]any); ok {
			for name, p := range props {
				walk(at+"/properties/"+name, p.(map[string]any))
			}
		}
		if items, ok := s["items"].(map[string]any); ok {
			walk(at+"/items", items)
		}
	}
	walk("", schema)
}

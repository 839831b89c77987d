package deploy

import (
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	corev1 "k8s.io/api/core/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
)

// The Secrets, keys and Service of pulp-operator (github.com/pulp/pulp-operator)
// that pulp.cr wires in, as the operator makes and reads them:
// controllers/repo_manager/database.go databaseConfigSecret (managed
// database), controllers/repo_manager/secret.go databaseSettings and
// cacheSettings (external database and cache, every key required),
// controllers/deployment.go and controllers/settings/services.go (the
// Redis Service "<cr>-redis-svc.<namespace>").
var (
	managedDatabaseKeys = map[string]string{
		"REAPER_DATABASE_HOST": "host", "REAPER_DATABASE_PORT": "port", "REAPER_DATABASE_NAME": "database",
		"REAPER_DATABASE_USER": "username", "REAPER_DATABASE_PASSWORD": "password", "REAPER_DATABASE_SSLMODE": "sslmode",
	}
	externalDatabaseKeys = map[string]string{
		"REAPER_DATABASE_HOST": "POSTGRES_HOST", "REAPER_DATABASE_PORT": "POSTGRES_PORT", "REAPER_DATABASE_NAME": "POSTGRES_DB_NAME",
		"REAPER_DATABASE_USER": "POSTGRES_USERNAME", "REAPER_DATABASE_PASSWORD": "POSTGRES_PASSWORD", "REAPER_DATABASE_SSLMODE": "POSTGRES_SSLMODE",
	}
	externalCacheKeys = map[string]string{
		"REAPER_REDIS_HOST": "REDIS_HOST", "REAPER_REDIS_PORT": "REDIS_PORT", "REAPER_REDIS_PASSWORD": "REDIS_PASSWORD", "REAPER_REDIS_DB": "REDIS_DB",
	}
)

// pulpWiring is what a container in pulp.cr mode must be given: each setting
// a file from a Secret key, or a plain value.
type pulpWiring struct {
	files  map[string]fileSource // REAPER_* setting (without _FILE) -> Secret key
	values map[string]string     // REAPER_* setting -> value
}

func secretKeys(secret string, keys map[string]string) map[string]fileSource {
	out := map[string]fileSource{}
	for env, key := range keys {
		out[env] = fileSource{"secret", secret, key}
	}
	return out
}

// checkPulpWiring checks that every connection setting reaches the container
// as the wiring says, that no URL form is set, and that no Secret value is
// in the environment.
func checkPulpWiring(t *testing.T, pod corev1.PodSpec, c corev1.Container, want pulpWiring) {
	t.Helper()
	if got := envValue(c, "REAPER_CONFIG"); got != configFile {
		t.Errorf("REAPER_CONFIG=%q, want %q", got, configFile)
	}
	if got := resolveFile(t, pod, c, configFile); got != (fileSource{"configMap", fullname, "config.yaml"}) {
		t.Errorf("%s comes from %+v", configFile, got)
	}
	for _, e := range c.Env {
		name, isFile := strings.CutSuffix(e.Name, "_FILE")
		switch {
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
			t.Errorf("env %s takes a Secret value into the environment; mount it as a file", e.Name)
		case strings.HasPrefix(name, "REAPER_REDIS_URL"), strings.HasPrefix(name, "REAPER_DATABASE_URL"):
			t.Errorf("env %s: the URL form is set in pulp.cr mode", e.Name)
		case isFile && strings.HasPrefix(name, "REAPER_") && name != "REAPER_CONFIG":
			src, ok := want.files[name]
			if !ok {
				t.Errorf("env %s: unexpected", e.Name)
				continue
			}
			if got := resolveFile(t, pod, c, e.Value); got != src {
				t.Errorf("env %s=%s comes from %+v, want %+v", e.Name, e.Value, got, src)
			}
		}
	}
	for name := range want.files {
		if envValue(c, name+"_FILE") == "" {
			t.Errorf("no env %s_FILE", name)
		}
		if envValue(c, name) != "" {
			t.Errorf("env %s is set as a value as well as a file", name)
		}
	}
	for name, value := range want.values {
		if got := envValue(c, name); got != value {
			t.Errorf("env %s=%q, want %q", name, got, value)
		}
	}
}

func TestPulpOperatorManaged(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"cronjob", "deployment"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			m := render(t, map[string]any{"mode": mode, "pulp": map[string]any{"cr": "galaxy"}})
			if len(m.secrets) != 0 {
				t.Errorf("pulp.cr: the chart made a Secret %q; it must use the operator's", m.secrets[0].Name)
			}
			pod := podOf(t, m)
			checkRestrictedPod(t, pod.Spec)
			checkPulpWiring(t, pod.Spec, reaperContainer(t, pod.Spec), pulpWiring{
				files:  secretKeys("galaxy-postgres-configuration", managedDatabaseKeys),
				values: map[string]string{"REAPER_REDIS_HOST": "galaxy-redis-svc." + namespace, "REAPER_REDIS_PORT": "6379"},
			})
			if _, ok := pod.Annotations["checksum/secret"]; ok {
				t.Error("checksum/secret of the operator's Secret, which the chart does not manage")
			}
		})
	}
}

func TestPulpOperatorExternal(t *testing.T) {
	t.Parallel()
	m := render(t, map[string]any{"mode": "deployment", "pulp": map[string]any{
		"cr":       "galaxy",
		"database": map[string]any{"externalSecret": "galaxy-external-db"},
		"cache":    map[string]any{"externalSecret": "galaxy-external-redis"},
	}})
	pod := podOf(t, m).Spec
	files := secretKeys("galaxy-external-db", externalDatabaseKeys)
	maps.Copy(files, secretKeys("galaxy-external-redis", externalCacheKeys))
	c := reaperContainer(t, pod)
	checkPulpWiring(t, pod, c, pulpWiring{files: files})
	if envValue(c, "REAPER_REDIS_HOST") != "" {
		t.Error("the operator's Redis Service is set although pulp.cache.externalSecret names the cache")
	}
}

func TestPulpOperatorOverrides(t *testing.T) {
	t.Parallel()
	m := render(t, map[string]any{"pulp": map[string]any{
		"cr":       "galaxy",
		"database": map[string]any{"secret": "galaxy-db-readonly"},
		"cache":    map[string]any{"redisPort": 6380},
	}})
	pod := podOf(t, m).Spec
	checkPulpWiring(t, pod, reaperContainer(t, pod), pulpWiring{
		files:  secretKeys("galaxy-db-readonly", managedDatabaseKeys),
		values: map[string]string{"REAPER_REDIS_HOST": "galaxy-redis-svc." + namespace, "REAPER_REDIS_PORT": "6380"},
	})
}

func TestPulpOperatorConflicts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		vals map[string]any
		want string
	}{
		{map[string]any{"pulp": map[string]any{"cr": "galaxy"}, "existingSecret": "pulp-dsn"}, "leave existingSecret"},
		{withDSNs(map[string]any{"pulp": map[string]any{"cr": "galaxy"}}), "leave existingSecret, redisUrl and databaseUrl empty"},
		{map[string]any{"mode": "sidecar", "pulp": map[string]any{"cr": "galaxy"}}, "reconciles its worker Deployments"},
		{withDSNs(map[string]any{"pulp": map[string]any{"database": map[string]any{"externalSecret": "db"}}}), "need pulp.cr"},
		{map[string]any{"pulp": map[string]any{"cr": "galaxy", "database": map[string]any{"secret": "a", "externalSecret": "b"}}}, "not both"},
	} {
		_, err := renderChart(loadChart(t), tc.vals)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: want an error saying %q, got %v", toJSON(tc.vals), tc.want, err)
		}
	}
}

// TestPulpOperatorExamples renders the README's two pulp-operator cases,
// which are also example values files.
func TestPulpOperatorExamples(t *testing.T) {
	t.Parallel()
	var cases []string
	for _, file := range exampleFiles(t) {
		vals := readValuesFile(t, file)
		pulp, _ := vals["pulp"].(map[string]any)
		if pulp == nil || pulp["cr"] == nil {
			continue
		}
		cases = append(cases, file)
		db, _ := pulp["database"].(map[string]any)
		if db != nil && db["externalSecret"] != nil {
			cases = append(cases, "external database")
		} else {
			cases = append(cases, "managed database")
		}
	}
	if !slices.Contains(cases, "external database") || !slices.Contains(cases, "managed database") {
		t.Errorf("examples with pulp.cr: %q; want one with the managed and one with an external database", cases)
	}
}

// checkPulpExample checks an example values file's pulp.cr wiring.
func checkPulpExample(t *testing.T, pod corev1.PodSpec, pulp map[string]any) {
	t.Helper()
	cr := pulp["cr"].(string)
	db, _ := pulp["database"].(map[string]any)
	cache, _ := pulp["cache"].(map[string]any)
	want := pulpWiring{files: secretKeys(cr+"-postgres-configuration", managedDatabaseKeys), values: map[string]string{}}
	if db != nil && db["externalSecret"] != nil {
		want.files = secretKeys(db["externalSecret"].(string), externalDatabaseKeys)
	}
	if cache != nil && cache["externalSecret"] != nil {
		maps.Copy(want.files, secretKeys(cache["externalSecret"].(string), externalCacheKeys))
	} else {
		want.values["REAPER_REDIS_HOST"] = cr + "-redis-svc." + namespace
		want.values["REAPER_REDIS_PORT"] = "6379"
	}
	checkPulpWiring(t, pod, reaperContainer(t, pod), want)
}

// TestReadmePulpOperator keeps the README's "With pulp-operator" values those
// of the example files, and renders them.
func TestReadmePulpOperator(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join(chartDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"pulp-operator-managed", "pulp-operator-external"} {
		m := regexp.MustCompile("(?s)<!-- " + name + " -->\\s*```yaml\n(.*?)```").FindSubmatch(readme)
		if m == nil {
			t.Errorf("README.md has no yaml block after <!-- %s -->", name)
			continue
		}
		vals, err := chartutil.ReadValues(m[1])
		if err != nil {
			t.Fatalf("README.md %s: %v", name, err)
		}
		example := readValuesFile(t, filepath.Join("examples", name+".yaml"))
		for _, key := range []string{"mode", "pulp"} {
			if !reflect.DeepEqual(vals[key], example[key]) {
				t.Errorf("README.md %s: %s is %s, examples/%s.yaml has %s", name, key, toJSON(vals[key]), name, toJSON(example[key]))
			}
		}
		pod := podOf(t, render(t, vals.AsMap())).Spec
		checkPulpExample(t, pod, vals["pulp"].(map[string]any))
	}
}

// TestPulpOperatorUserSettingsWin: a connection setting the user wrote,
// config.database.sslmode or an extraEnv variable, wins over the one the
// operator's Secret or Service gives. The chart then mounts no file for it
// and sets no value: REAPER_DATABASE_SSLMODE_FILE would beat the
// configuration file, and beside REAPER_DATABASE_SSLMODE in extraEnv the
// reaper stops on "both set".
func TestPulpOperatorUserSettingsWin(t *testing.T) {
	t.Parallel()
	withoutKeys := func(secret string, keys map[string]string, drop ...string) map[string]fileSource {
		files := secretKeys(secret, keys)
		for _, d := range drop {
			delete(files, d)
		}
		return files
	}
	for _, tc := range []struct {
		name     string
		vals     map[string]any
		files    map[string]fileSource
		values   map[string]string
		inConfig bool
	}{
		{"config.database.sslmode, managed database",
			map[string]any{"pulp": map[string]any{"cr": "galaxy"}, "config": map[string]any{"database": map[string]any{"sslmode": "verify-full"}}},
			withoutKeys("galaxy-postgres-configuration", managedDatabaseKeys, "REAPER_DATABASE_SSLMODE"),
			map[string]string{"REAPER_REDIS_HOST": "galaxy-redis-svc." + namespace}, true},
		{"config.database.sslmode, external database",
			map[string]any{"pulp": map[string]any{"cr": "galaxy", "database": map[string]any{"externalSecret": "galaxy-external-db"}},
				"config": map[string]any{"database": map[string]any{"sslmode": "verify-full"}}},
			withoutKeys("galaxy-external-db", externalDatabaseKeys, "REAPER_DATABASE_SSLMODE"), nil, true},
		{"extraEnv REAPER_DATABASE_SSLMODE",
			map[string]any{"pulp": map[string]any{"cr": "galaxy"},
				"extraEnv": []any{map[string]any{"name": "REAPER_DATABASE_SSLMODE", "value": "verify-full"}}},
			withoutKeys("galaxy-postgres-configuration", managedDatabaseKeys, "REAPER_DATABASE_SSLMODE"),
			map[string]string{"REAPER_DATABASE_SSLMODE": "verify-full"}, false},
		{"extraEnv REAPER_DATABASE_HOST_FILE and REAPER_REDIS_HOST",
			map[string]any{"pulp": map[string]any{"cr": "galaxy"}, "extraEnv": []any{
				map[string]any{"name": "REAPER_DATABASE_HOST_FILE", "value": "/etc/pulp-db/host"},
				map[string]any{"name": "REAPER_REDIS_HOST", "value": "redis.pulp-cache"},
			}},
			withoutKeys("galaxy-postgres-configuration", managedDatabaseKeys, "REAPER_DATABASE_HOST"),
			map[string]string{"REAPER_REDIS_HOST": "redis.pulp-cache", "REAPER_REDIS_PORT": "6379"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := render(t, tc.vals)
			pod := podOf(t, m).Spec
			c := reaperContainer(t, pod)
			checkNoEnvConflict(t, c)
			for env := range managedDatabaseKeys {
				if _, kept := tc.files[env]; !kept && envValue(c, env+"_FILE") != "" && !strings.HasPrefix(envValue(c, env+"_FILE"), "/etc/pulp-db/") {
					t.Errorf("env %s_FILE from the Secret although the user set %s", env, env)
				}
			}
			for env, src := range tc.files {
				if got := resolveFile(t, pod, c, envValue(c, env+"_FILE")); got != src {
					t.Errorf("env %s_FILE comes from %+v, want %+v", env, got, src)
				}
			}
			for name, value := range tc.values {
				if got := envValue(c, name); got != value {
					t.Errorf("env %s=%q, want %q", name, got, value)
				}
			}
			for _, v := range pod.Volumes {
				if v.Projected == nil {
					continue
				}
				for _, s := range v.Projected.Sources {
					for _, item := range itemsOf(s) {
						if item.Path == "database/sslmode" && tc.files["REAPER_DATABASE_SSLMODE"] == (fileSource{}) {
							t.Errorf("the Secret's %s is still mounted at database/sslmode", item.Key)
						}
					}
				}
			}
			if tc.inConfig {
				db, _ := configOf(t, m)["database"].(map[string]any)
				if db["sslmode"] != "verify-full" {
					t.Errorf("config.yaml database %v lacks sslmode: verify-full", db)
				}
			}
		})
	}
}

func itemsOf(s corev1.VolumeProjection) []corev1.KeyToPath {
	if s.Secret != nil {
		return s.Secret.Items
	}
	return nil
}

// checkNoEnvConflict fails on what the reaper refuses to start with (NAME
// and NAME_FILE both set) and on a name set twice, of which Kubernetes
// silently keeps one.
func checkNoEnvConflict(t *testing.T, c corev1.Container) {
	t.Helper()
	seen := map[string]bool{}
	for _, e := range c.Env {
		if seen[e.Name] {
			t.Errorf("env %s is set twice", e.Name)
		}
		seen[e.Name] = true
	}
	for name := range seen {
		if base, ok := strings.CutSuffix(name, "_FILE"); ok && seen[base] {
			t.Errorf("env %s and %s are both set: the reaper exits 2", base, name)
		}
	}
}

// pulpOperatorPodLabels are the labels pulp-operator puts on the pods of a
// Pulp CR's component (controllers/settings/labels.go PulpcoreLabels and
// CommonLabels).
func pulpOperatorPodLabels(cr, component string) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name": "pulp-" + component, "app.kubernetes.io/instance": "pulp-" + component + "-" + cr,
		"app.kubernetes.io/component": component, "app": "pulp-" + component,
		"app.kubernetes.io/part-of": "pulp", "app.kubernetes.io/managed-by": "pulp-operator", "pulp_cr": cr,
	}
}

// TestPulpOperatorKubernetesEvidence: pulp.cr turns Kubernetes evidence on
// (unless kubernetes.enabled says false) with the program's default
// selector narrowed to the CR's own pods, so that the pods of a second CR
// in the namespace are never taken for this one's workers.
func TestPulpOperatorKubernetesEvidence(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile(filepath.Join(repoRoot, "heartbeat", "kube", "open.go"))
	if err != nil {
		t.Fatal(err)
	}
	def := regexp.MustCompile(`DefaultSelector = "([^"]+)"`).FindSubmatch(src)
	if def == nil {
		t.Fatal("heartbeat/kube/open.go has no DefaultSelector")
	}
	for _, mode := range []string{"cronjob", "deployment"} {
		m := render(t, map[string]any{"mode": mode, "pulp": map[string]any{"cr": "galaxy"}})
		if len(m.roles) != 1 || len(m.roleBindings) != 1 {
			t.Fatalf("%s: pulp.cr rendered %q, want a Role and a RoleBinding", mode, m.kinds())
		}
		pod := podOf(t, m).Spec
		if !isTrue(pod.AutomountServiceAccountToken) {
			t.Errorf("%s: pulp.cr does not mount the service account token", mode)
		}
		c := reaperContainer(t, pod)
		if got := envValue(c, "REAPER_KUBERNETES_ENABLED"); got != "true" {
			t.Errorf("%s: REAPER_KUBERNETES_ENABLED=%q with pulp.cr, want true", mode, got)
		}
		if got := envValue(c, "REAPER_KUBERNETES_NAMESPACE"); got != namespace {
			t.Errorf("%s: REAPER_KUBERNETES_NAMESPACE=%q, want the CR's (the release's) %q", mode, got, namespace)
		}
		raw := envValue(c, "REAPER_KUBERNETES_SELECTOR")
		if want := string(def[1]) + ",pulp_cr=galaxy"; raw != want {
			t.Errorf("%s: REAPER_KUBERNETES_SELECTOR=%q, want the program's default narrowed to the CR: %q", mode, raw, want)
		}
		sel, err := k8slabels.Parse(raw)
		if err != nil {
			t.Fatalf("%s: selector %q: %v", mode, raw, err)
		}
		for _, tc := range []struct {
			cr, component string
			want          bool
		}{{"galaxy", "worker", true}, {"galaxy", "api", true}, {"galaxy", "database", false}, {"hub", "worker", false}, {"hub", "api", false}} {
			if got := sel.Matches(k8slabels.Set(pulpOperatorPodLabels(tc.cr, tc.component))); got != tc.want {
				t.Errorf("%s: selector %q matches the %s pods of CR %s: %v, want %v", mode, raw, tc.component, tc.cr, got, tc.want)
			}
		}
	}

	m := render(t, map[string]any{"pulp": map[string]any{"cr": "galaxy"}, "kubernetes": map[string]any{"enabled": false}})
	if len(m.roles) != 0 || envValue(reaperContainer(t, podOf(t, m).Spec), "REAPER_KUBERNETES_ENABLED") != "false" {
		t.Errorf("pulp.cr with kubernetes.enabled false rendered %q and left evidence on", m.kinds())
	}
	m = render(t, map[string]any{"pulp": map[string]any{"cr": "galaxy"}, "kubernetes": map[string]any{"selector": "app=pulp-worker,pulp_cr=galaxy"}})
	if got := envValue(reaperContainer(t, podOf(t, m).Spec), "REAPER_KUBERNETES_SELECTOR"); got != "app=pulp-worker,pulp_cr=galaxy" {
		t.Errorf("kubernetes.selector with pulp.cr: REAPER_KUBERNETES_SELECTOR=%q, want the user's", got)
	}
}

package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The role internal/privilege/postgres.sql creates, and the password it
// has in place of the operator's own (this module cannot import the
// package that embeds the file).
const (
	docRole     = "lock_reaper"
	docPassword = "change-me"
)

// roleSection is the section of docs/kubernetes.md whose commands create
// the least-privilege role under pulp-operator and hand it to the chart.
const roleSection = "## Under pulp-operator: a role of its own"

// docCommands reads the sh block of a section of docs/kubernetes.md as
// logical lines: continuations joined, comments and blank lines dropped.
func docCommands(t *testing.T, section string) []string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "kubernetes.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, body, ok := strings.Cut(string(doc), "\n"+section+"\n")
	if !ok {
		t.Fatalf("docs/kubernetes.md has no section %q", section)
	}
	body, _, _ = strings.Cut(body, "\n## ")
	m := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("docs/kubernetes.md %q has no sh block", section)
	}
	var lines []string
	for _, l := range strings.Split(strings.ReplaceAll(m[1], "\\\n", " "), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, strings.Join(strings.Fields(l), " "))
		}
	}
	return lines
}

func lineWith(t *testing.T, lines []string, prefix string) string {
	t.Helper()
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	t.Fatalf("no command %q… in %q", prefix, lines)
	return ""
}

// TestKubernetesDocRoleOfItsOwn: the commands that give the reaper a role
// of its own under pulp-operator make the role of postgres.sql with the
// generated password, in the operator's database pod, and a Secret of
// exactly the keys the chart mounts from one shaped like
// <cr>-postgres-configuration (the keys TestPulpOperatorSecrets in
// internal/config parses), which the helm line names.
func TestKubernetesDocRoleOfItsOwn(t *testing.T) {
	t.Parallel()
	lines := docCommands(t, roleSection)
	if got := lineWith(t, lines, "NS="); got != "NS="+namespace+" CR=galaxy" {
		t.Fatalf("the first line is %q; the test expects NS=%s CR=galaxy", got, namespace)
	}
	expand := strings.NewReplacer("$CR", "galaxy", "$NS", namespace, `"`, "").Replace

	// The role: postgres.sql with the password in place of change-me, piped
	// into psql in the database pod pulp-operator runs: StatefulSet
	// <cr>-database (controllers/settings/statefulsets.go
	// DefaultDBStatefulSet), container "postgres", POSTGRES_USER and
	// POSTGRES_DB from <cr>-postgres-configuration
	// (controllers/repo_manager/database.go).
	pipe := lineWith(t, lines, "sed ")
	sedCmd, psql, ok := strings.Cut(pipe, " | ")
	if !ok {
		t.Fatalf("%q pipes nothing into psql", pipe)
	}
	for _, want := range []string{`kubectl -n "$NS" exec -i "$CR-database-0" -c postgres --`, "psql -v ON_ERROR_STOP=1", `-U "$POSTGRES_USER"`, `-d "$POSTGRES_DB"`} {
		if !strings.Contains(psql, want) {
			t.Errorf("%q lacks %q", psql, want)
		}
	}
	cmd := exec.Command("bash", "-c", "PASSWORD=0a1b2c3d4e5f; "+sedCmd)
	cmd.Dir = repoRoot
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v", sedCmd, err)
	}
	sql, err := os.ReadFile(filepath.Join(repoRoot, "internal", "privilege", "postgres.sql"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(sql), "CREATE ROLE "+docRole+" LOGIN PASSWORD '"+docPassword+"';") {
		t.Fatalf("postgres.sql no longer creates %s with the password %s", docRole, docPassword)
	}
	want := strings.Replace(string(sql), "'"+docPassword+"'", "'0a1b2c3d4e5f'", 1)
	if string(out) != want || strings.Contains(string(out), docPassword) {
		t.Errorf("%s gives\n%s\nwant postgres.sql with the password 0a1b2c3d4e5f", sedCmd, out)
	}
	if gen := lineWith(t, lines, "PASSWORD="); !strings.HasPrefix(gen, "PASSWORD=$(openssl rand -hex ") {
		t.Errorf("%q: a hex password needs no quoting in sed, SQL, the shell or a URL", gen)
	}

	// The Secret: every key the chart mounts from pulp.database.secret, the
	// role's name and the generated password.
	create := lineWith(t, lines, "kubectl -n \"$NS\" create secret generic ")
	secret := expand(strings.Fields(create)[6])
	var keys []string
	for _, m := range regexp.MustCompile(`--from-literal=(\w+)=(\S+)`).FindAllStringSubmatch(create, -1) {
		keys = append(keys, m[1])
		switch m[1] {
		case "username":
			if m[2] != docRole {
				t.Errorf("username=%s, the role postgres.sql creates is %s", m[2], docRole)
			}
		case "password":
			if m[2] != `"$PASSWORD"` {
				t.Errorf("password=%s, want the generated \"$PASSWORD\"", m[2])
			}
		}
	}
	var wantKeys []string
	for _, k := range managedDatabaseKeys {
		wantKeys = append(wantKeys, k)
	}
	slices.Sort(keys)
	slices.Sort(wantKeys)
	if !slices.Equal(keys, wantKeys) {
		t.Errorf("the Secret has keys %v; the chart mounts %v", keys, wantKeys)
	}

	// The chart, installed as the doc says, reads that Secret.
	helm := lineWith(t, lines, "helm install ")
	pulp := map[string]any{}
	for _, m := range regexp.MustCompile(`--set (pulp\.[\w.]+)=(\S+)`).FindAllStringSubmatch(helm, -1) {
		switch m[1] {
		case "pulp.cr":
			pulp["cr"] = expand(m[2])
		case "pulp.database.secret":
			pulp["database"] = map[string]any{"secret": expand(m[2])}
		default:
			t.Errorf("%q: unexpected --set %s", helm, m[1])
		}
	}
	if pulp["cr"] != "galaxy" || pulp["database"] == nil || pulp["database"].(map[string]any)["secret"] != secret {
		t.Fatalf("%q sets %v, want pulp.cr=galaxy and pulp.database.secret=%s", helm, pulp, secret)
	}
	pod := podOf(t, render(t, map[string]any{"pulp": pulp})).Spec
	checkPulpWiring(t, pod, reaperContainer(t, pod), pulpWiring{
		files:  secretKeys(secret, managedDatabaseKeys),
		values: map[string]string{"REAPER_REDIS_HOST": "galaxy-redis-svc." + namespace, "REAPER_REDIS_PORT": "6379"},
	})
}

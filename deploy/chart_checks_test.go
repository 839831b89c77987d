package deploy

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// checkRestrictedPod checks the pod against the "restricted" Pod Security
// Standard and the chart's own rules.
func checkRestrictedPod(t *testing.T, pod corev1.PodSpec) {
	t.Helper()
	sc := pod.SecurityContext
	// runAsUser may be left unset (OpenShift assigns one); set, it is the
	// image's nonroot user.
	if sc == nil || !isTrue(sc.RunAsNonRoot) || (sc.RunAsUser != nil && fmt.Sprint(*sc.RunAsUser) != nonrootUID) ||
		sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext %s: want runAsNonRoot, runAsUser %s or unset, seccompProfile RuntimeDefault", toJSON(sc), nonrootUID)
	}
	if pod.HostNetwork || pod.HostPID || pod.HostIPC {
		t.Error("pod shares a host namespace")
	}
	// The token is for the Kubernetes evidence of liveness, and only for it.
	kube := false
	for _, c := range pod.Containers {
		kube = kube || envValue(c, "REAPER_KUBERNETES_ENABLED") == "true"
	}
	if mounted := pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken; mounted != kube {
		t.Errorf("pod mounts a service account token: %v; want it exactly when REAPER_KUBERNETES_ENABLED is true (%v)", mounted, kube)
	}
	for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
		checkRestrictedContainer(t, c)
	}
}

func checkRestrictedContainer(t *testing.T, c corev1.Container) {
	t.Helper()
	sc := c.SecurityContext
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		!isTrue(sc.ReadOnlyRootFilesystem) || isTrue(sc.Privileged) || !isTrue(sc.RunAsNonRoot) ||
		(sc.RunAsUser != nil && fmt.Sprint(*sc.RunAsUser) != nonrootUID) ||
		sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
		t.Errorf("container %s securityContext %s: want allowPrivilegeEscalation false, readOnlyRootFilesystem, runAsNonRoot, runAsUser %s or unset, seccompProfile RuntimeDefault, capabilities drop [ALL]", c.Name, toJSON(sc), nonrootUID)
	}
	for _, want := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := c.Resources.Requests[want]; !ok {
			t.Errorf("container %s requests no %s", c.Name, want)
		}
	}
	if _, ok := c.Resources.Limits[corev1.ResourceMemory]; !ok {
		t.Errorf("container %s has no memory limit", c.Name)
	}
	checkMemoryLimitEnv(t, c)
	for _, e := range c.Env {
		if strings.Contains(e.Value, "://") {
			t.Errorf("container %s has a URL in env %s: DSNs must come from files", c.Name, e.Name)
		}
	}
}

// checkMemoryLimitEnv checks that the binary learns the container's memory
// limit, from which it sets its soft limit below it (internal/memlimit), and
// that GOMEMLIMIT, which would override that with the whole limit, is not set.
func checkMemoryLimitEnv(t *testing.T, c corev1.Container) {
	t.Helper()
	var ref *corev1.ResourceFieldSelector
	for _, e := range c.Env {
		switch {
		case e.Name == "GOMEMLIMIT":
			t.Errorf("container %s sets GOMEMLIMIT: the binary sets its own below REAPER_MEMORY_LIMIT", c.Name)
		case e.Name == "REAPER_MEMORY_LIMIT" && e.ValueFrom != nil:
			ref = e.ValueFrom.ResourceFieldRef
		}
	}
	if ref == nil || ref.Resource != "limits.memory" || (ref.ContainerName != "" && ref.ContainerName != c.Name) || (!ref.Divisor.IsZero() && ref.Divisor.Value() != 1) {
		t.Errorf("container %s: REAPER_MEMORY_LIMIT is %s, want the container's limits.memory in bytes", c.Name, toJSON(ref))
	}
}

func isTrue(b *bool) bool { return b != nil && *b }

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// fileSource says where a file that a container reads comes from.
type fileSource struct {
	Kind string // "configMap" or "secret"
	Name string
	Key  string
}

// resolveFile finds the volume source of an absolute file path in container
// c of pod, following the container's mounts and the pod's projected volumes.
func resolveFile(t *testing.T, pod corev1.PodSpec, c corev1.Container, file string) fileSource {
	t.Helper()
	for _, mnt := range c.VolumeMounts {
		rel, ok := strings.CutPrefix(file, strings.TrimSuffix(mnt.MountPath, "/")+"/")
		if !ok || mnt.SubPath != "" {
			continue
		}
		if !mnt.ReadOnly {
			t.Errorf("mount %s of %s is writable", mnt.MountPath, c.Name)
		}
		for _, v := range pod.Volumes {
			if v.Name != mnt.Name || v.Projected == nil {
				continue
			}
			for _, src := range v.Projected.Sources {
				if src.ConfigMap != nil {
					for _, it := range src.ConfigMap.Items {
						if it.Path == rel {
							return fileSource{"configMap", src.ConfigMap.Name, it.Key}
						}
					}
				}
				if src.Secret != nil {
					for _, it := range src.Secret.Items {
						if it.Path == rel {
							return fileSource{"secret", src.Secret.Name, it.Key}
						}
					}
				}
			}
		}
	}
	t.Fatalf("container %s: no projected volume provides %s", c.Name, file)
	return fileSource{}
}

func envValue(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// checkFiles checks that the container is pointed at its configuration and
// DSN files and that those come from the ConfigMap and the Secret.
func checkFiles(t *testing.T, pod corev1.PodSpec, c corev1.Container, secretName, redisKey, databaseKey string) {
	t.Helper()
	for env, want := range map[string]string{
		"REAPER_CONFIG":            configFile,
		"REAPER_REDIS_URL_FILE":    redisURLFile,
		"REAPER_DATABASE_URL_FILE": databaseURLFile,
	} {
		if got := envValue(c, env); got != want {
			t.Errorf("container %s: %s=%q, want %q", c.Name, env, got, want)
		}
	}
	for file, want := range map[string]fileSource{
		configFile:      {"configMap", fullname, "config.yaml"},
		redisURLFile:    {"secret", secretName, redisKey},
		databaseURLFile: {"secret", secretName, databaseKey},
	} {
		if got := resolveFile(t, pod, c, file); got != want {
			t.Errorf("container %s: %s comes from %+v, want %+v", c.Name, file, got, want)
		}
	}
	for _, v := range pod.Volumes {
		if v.Projected != nil && (v.Projected.DefaultMode == nil || *v.Projected.DefaultMode != 0o444) {
			t.Errorf("volume %s: defaultMode %v, want 0444", v.Name, v.Projected.DefaultMode)
		}
	}
}

func checkHTTPProbe(t *testing.T, kind string, p *corev1.Probe, wantPath, wantPort string) {
	t.Helper()
	if p == nil || p.HTTPGet == nil {
		t.Errorf("no HTTP %s probe", kind)
		return
	}
	if p.HTTPGet.Path != wantPath || p.HTTPGet.Port.String() != wantPort {
		t.Errorf("%s probe GET %s on port %s, want %s on %s", kind, p.HTTPGet.Path, p.HTTPGet.Port.String(), wantPath, wantPort)
	}
}

// subsetOf tells whether every label of sel is in set, and sel has some.
func subsetOf(sel, set map[string]string) bool {
	for k, v := range sel {
		if set[k] != v {
			return false
		}
	}
	return len(sel) > 0
}

// configOf is the decoded configuration file of the rendering's ConfigMap.
func configOf(t *testing.T, m manifests) map[string]any {
	t.Helper()
	if len(m.configMaps) != 1 {
		t.Fatalf("want one ConfigMap, got %d", len(m.configMaps))
	}
	// Beside the configuration, sidecar mode keeps the worker patch there
	// (TestSidecarPatch).
	data := maps.Clone(m.configMaps[0].Data)
	delete(data, "sidecar-patch.yaml")
	raw, ok := data["config.yaml"]
	if !ok || len(data) != 1 {
		t.Fatalf("ConfigMap data keys %v, want only config.yaml", slices.Sorted(maps.Keys(m.configMaps[0].Data)))
	}
	var cfg map[string]any
	if err := yaml.UnmarshalStrict([]byte(raw), &cfg); err != nil {
		t.Fatalf("config.yaml is not YAML: %v\n%s", err, raw)
	}
	return cfg
}

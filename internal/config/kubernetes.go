package config

import (
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/labels"
)

// kubeconfigEnv names a laptop's kubeconfig when --kubeconfig is not given:
// a list of files, as kubectl reads it (package kube loads it).
const kubeconfigEnv = "KUBECONFIG"

// checkSelector accepts what the Kubernetes API accepts as a label selector.
func checkSelector(s string) error {
	if _, err := labels.Parse(s); err != nil {
		return fmt.Errorf("invalid label selector %q: %w", s, err)
	}
	return nil
}

func nonEmpty(s string) error {
	if s == "" {
		return fmt.Errorf("must not be empty")
	}
	return nil
}

// registerKubeconfig defines --kubeconfig, which is a laptop's file rather
// than a setting of the reaper, so it has no key, no REAPER_ variable and no
// place in the config file.
func registerKubeconfig(fs *pflag.FlagSet) *flagValue {
	v := &flagValue{kind: "file"}
	fs.Var(v, "kubeconfig", "kubeconfig `file` of the cluster whose pods to read, instead of the in-cluster configuration (env "+kubeconfigEnv+")")
	return v
}

// kubeconfigPaths is --kubeconfig, else KUBECONFIG's list.
func (l *Loader) kubeconfigPaths(getenv func(string) (string, bool)) (file, list string) {
	if l.kubeconfig != nil && l.kubeconfig.set {
		return l.kubeconfig.val, ""
	}
	v, _ := getenv(kubeconfigEnv)
	return "", v
}

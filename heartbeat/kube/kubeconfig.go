package kube

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
)

// kubeconfigRules are the loading rules kubectl uses for the kubeconfig the
// user named, and how to name it in an error; ok is false when none is named
// (then the reaper reads the in-cluster configuration).
//
// --kubeconfig is one file, which must exist. KUBECONFIG is a list of files
// separated as the platform separates paths (":" here), exactly as kubectl
// reads it: clientcmd's Precedence skips the files that do not exist and
// merges the others, the first file to set a key winning.
func kubeconfigRules(cfg Config) (rules *clientcmd.ClientConfigLoadingRules, where string, ok bool) {
	switch {
	case cfg.Kubeconfig != "":
		return &clientcmd.ClientConfigLoadingRules{ExplicitPath: cfg.Kubeconfig}, "kubeconfig " + cfg.Kubeconfig, true
	case cfg.KubeconfigEnv != "":
		var files []string
		for _, f := range filepath.SplitList(cfg.KubeconfigEnv) {
			if f != "" {
				files = append(files, f)
			}
		}
		if len(files) == 0 {
			return nil, "", false
		}
		return &clientcmd.ClientConfigLoadingRules{Precedence: files}, "KUBECONFIG " + cfg.KubeconfigEnv, true
	}
	return nil, "", false
}

// kubeconfigError names the kubeconfig, says what is wrong with it, and the
// fix.
func kubeconfigError(where string, rules *clientcmd.ClientConfigLoadingRules, err error) error {
	if len(rules.Precedence) > 0 && !anyExists(rules.Precedence) {
		return fmt.Errorf("%s: none of its files exists; point KUBECONFIG at your cluster's kubeconfig "+
			"(kubectl config view shows what it reads), or set kubernetes.enabled: false", where)
	}
	if clientcmd.IsEmptyConfig(err) || errors.Is(err, clientcmd.ErrEmptyConfig) {
		return fmt.Errorf("%s: it names no cluster (no current-context); run kubectl config use-context, "+
			"or set kubernetes.enabled: false", where)
	}
	return fmt.Errorf("%s: %w; fix the file (kubectl config view checks it), or set kubernetes.enabled: false", where, err)
}

func anyExists(files []string) bool {
	for _, f := range files {
		if _, err := os.Stat(f); err == nil {
			return true
		}
	}
	return false
}

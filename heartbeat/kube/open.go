package kube

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Values of kubernetes.enabled.
const (
	EnabledAuto  = "auto"
	EnabledTrue  = "true"
	EnabledFalse = "false"
)

// Defaults of the kubernetes.* keys that name pods (the others, the
// reaper's, are in reaper.DefaultConfig).
const (
	// DefaultSelector covers pulp-operator's worker and API pods: its
	// PulpcoreLabels (controllers/settings/labels.go) give every pulpcore pod
	// app.kubernetes.io/component (worker, api, content) and
	// app.kubernetes.io/managed-by=pulp-operator.
	DefaultSelector = "app.kubernetes.io/managed-by=pulp-operator,app.kubernetes.io/component in (worker,api)"
	// DefaultContainer is pulp-operator's worker container name
	// (controllers/deployment.go, setContainers).
	DefaultContainer = "worker"
	// DefaultAPIContainer is pulp-operator's API container name (the same
	// setContainers); with telemetry on, its API pods also run the
	// otel-collector-sidecar container (controllers/telemetry.go).
	DefaultAPIContainer = "api"
	// serviceAccountNamespace holds the namespace of the pod's service account.
	serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
)

// Config is the kubernetes.* section, plus the kubeconfig of a laptop.
type Config struct {
	// Enabled is auto (on in a cluster whose service account may list pods),
	// true or false.
	Enabled string
	// Namespace to list; empty means the reaper's own.
	Namespace string
	// Selector of the pods; DefaultSelector when empty.
	Selector string
	// Container is the worker container's name; DefaultContainer when empty.
	Container string
	// APIContainer is the API container's name; DefaultAPIContainer when empty.
	APIContainer string
	// Timeout bounds auto's trial list (kubernetes.timeout, whose default is
	// the reaper's: reaper.DefaultConfig); zero leaves it to ctx.
	Timeout time.Duration
	// Kubeconfig, when set (--kubeconfig), is the one kubeconfig file to
	// read, instead of the in-cluster configuration.
	Kubeconfig string
	// KubeconfigEnv is KUBECONFIG's value, read when Kubeconfig is empty: a
	// list of files as kubectl reads it (see kubeconfigRules).
	KubeconfigEnv string
}

// Decision says whether Kubernetes evidence is on and why, for the log.
type Decision struct {
	Source *Source
	Reason string
	// Warn says the reason is worth a warning: auto turned the feature off
	// because the kubeconfig the user named cannot be used, or the pods may
	// be listed but not watched.
	Warn bool
	// WatchForbidden says the trial watch was refused (401/403) although the
	// list was allowed: `run` then lists the pods once per pass instead of
	// watching them, and says so once.
	WatchForbidden bool
	// rest is the client configuration the Source lists with, for the
	// Events (EventSink).
	rest *rest.Config
}

// EventSink writes Events through the configuration the Source lists with;
// nil when Kubernetes evidence is off.
func (d Decision) EventSink(instance string) (*EventSink, error) {
	if d.Source == nil || d.rest == nil {
		return nil, nil
	}
	return NewEventSink(d.rest, instance)
}

// Open decides, by cfg.Enabled, whether the reaper reads pods, and returns
// the Source that does (nil when off). An error is a configuration the user
// must fix: enabled true without a cluster, a bad selector or kubeconfig.
// auto never fails: off outside a cluster, off when the service account may
// not list pods (a trial list answers 403), on otherwise.
func Open(ctx context.Context, cfg Config) (Decision, error) {
	switch cfg.Enabled {
	case EnabledFalse:
		return Decision{Reason: "kubernetes.enabled is false"}, nil
	case EnabledAuto, EnabledTrue:
	default:
		return Decision{}, fmt.Errorf("kubernetes.enabled must be auto, true or false, got %q", cfg.Enabled)
	}
	restCfg, namespace, from, err := clientConfig(cfg)
	if err != nil {
		if cfg.Enabled == EnabledAuto {
			if errors.Is(err, rest.ErrNotInCluster) {
				return Decision{Reason: "not running in a Kubernetes cluster"}, nil
			}
			// A laptop's stale or broken kubeconfig must not stop a
			// command, least of all the break-glass release.
			return Decision{Reason: err.Error() + "; judging by heartbeats alone (kubernetes.enabled is auto)", Warn: true}, nil
		}
		return Decision{}, err
	}
	lister, err := newRESTPods(restCfg, namespace)
	if err != nil {
		if cfg.Enabled == EnabledAuto {
			return Decision{Reason: err.Error() + "; judging by heartbeats alone (kubernetes.enabled is auto)", Warn: true}, nil
		}
		return Decision{}, err
	}
	src, err := NewSource(lister, namespace, orDefault(cfg.Selector, DefaultSelector), orDefault(cfg.Container, DefaultContainer))
	if err != nil {
		return Decision{}, err
	}
	src.WithAPIContainer(cfg.APIContainer)
	if cfg.Enabled == EnabledTrue {
		return Decision{Source: src, Reason: "kubernetes.enabled is true", rest: restCfg}, nil
	}
	d, err := decideAuto(ctx, src, from, cfg.Timeout)
	d.rest = restCfg
	return d, err
}

// decideAuto lists one pod, then opens and closes a watch, to learn whether
// the reaper may list and watch pods. Only a refused list turns auto off: an
// API that is slow or down now may answer later, and each pass that cannot
// read it judges without it. A refused watch leaves the lists on. from says
// where the configuration came from ("in a cluster", or the kubeconfig).
func decideAuto(ctx context.Context, src *Source, from string, timeout time.Duration) (Decision, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	_, err := src.pods.List(ctx, metav1.ListOptions{LabelSelector: src.selector, Limit: 1})
	switch {
	case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
		return Decision{Reason: from + ", but may not list pods in " + src.namespace + ": " + err.Error()}, nil
	case err != nil:
		return Decision{Source: src, Reason: from + "; the trial list failed and passes will say so: " + err.Error()}, nil
	}
	if err := trialWatch(ctx, src); apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
		return Decision{Source: src, WatchForbidden: true, Warn: true, Reason: from + ", may list pods but not watch them: " +
			"run lists them once per pass and starts no pass on a container's end; grant watch on pods to fix: " + err.Error()}, nil
	}
	return Decision{Source: src, Reason: from + ", may list pods"}, nil
}

// trialWatch opens a watch of the Source's pods and closes it at once; nil
// for a source without a REST client (nothing to watch with).
func trialWatch(ctx context.Context, src *Source) error {
	rp, ok := src.pods.(restPods)
	if !ok {
		return nil
	}
	opts := metav1.ListOptions{LabelSelector: src.selector, Watch: true}
	w, err := rp.client.Get().Namespace(src.namespace).Resource("pods").VersionedParams(&opts, parameterCodec).Watch(ctx)
	if err != nil {
		return err
	}
	w.Stop()
	return nil
}

// clientConfig is the kubeconfig's configuration when one is named
// (--kubeconfig or KUBECONFIG), else the in-cluster one, with the namespace
// to list and where the configuration came from, for the log.
func clientConfig(cfg Config) (rc *rest.Config, namespace, from string, err error) {
	if rules, where, ok := kubeconfigRules(cfg); ok {
		loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
		rc, err := loader.ClientConfig()
		if err != nil {
			return nil, "", "", kubeconfigError(where, rules, err)
		}
		ns := cfg.Namespace
		if ns == "" {
			if ns, _, err = loader.Namespace(); err != nil {
				return nil, "", "", kubeconfigError(where, rules, fmt.Errorf("namespace: %w", err))
			}
		}
		return rc, ns, "with " + where, nil
	}
	rc, err = rest.InClusterConfig()
	if err != nil {
		return nil, "", "", fmt.Errorf("kubernetes in-cluster configuration: %w; run in a pod with a service account, "+
			"name a kubeconfig with --kubeconfig or KUBECONFIG, or set kubernetes.enabled to auto or false", err)
	}
	ns := cfg.Namespace
	if ns == "" {
		b, err := os.ReadFile(serviceAccountNamespace)
		if err != nil {
			return nil, "", "", fmt.Errorf("kubernetes.namespace is empty and the reaper's own is unreadable: %w", err)
		}
		ns = strings.TrimSpace(string(b))
	}
	return rc, ns, "in a cluster", nil
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

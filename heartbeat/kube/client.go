package kube

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
)

// scheme knows the core/v1 pod types and the list options, nothing else:
// client-go's kubernetes/scheme would link every API group into the binary.
var (
	scheme         = runtime.NewScheme()
	parameterCodec = runtime.NewParameterCodec(scheme)
)

func init() {
	if err := corev1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	metav1.AddToGroupVersion(scheme, corev1.SchemeGroupVersion)
}

// restPods lists pods with a REST client for the core/v1 group: the request
// client-go's typed CoreV1().Pods(namespace).List makes.
type restPods struct {
	client    rest.Interface
	namespace string
}

// newRESTPods returns a PodLister over cfg for one namespace.
func newRESTPods(cfg *rest.Config, namespace string) (PodLister, error) {
	client, err := restClient(cfg)
	if err != nil {
		return nil, err
	}
	return restPods{client: client, namespace: namespace}, nil
}

// restClient is a REST client for the core/v1 group over cfg.
func restClient(cfg *rest.Config) (rest.Interface, error) {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &corev1.SchemeGroupVersion
	c.APIPath = "/api"
	c.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = "lock-reaper"
	}
	client, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client for %s: %w", cfg.Host, err)
	}
	return client, nil
}

// NewRESTSource is a Source that lists the pods through the API server cfg
// names, as Open's does; tests point it at a stand-in server.
func NewRESTSource(cfg *rest.Config, namespace, selector, container string) (*Source, error) {
	lister, err := newRESTPods(cfg, namespace)
	if err != nil {
		return nil, err
	}
	return NewSource(lister, namespace, selector, container)
}

func (p restPods) List(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
	out := &corev1.PodList{}
	req := p.client.Get().Namespace(p.namespace).Resource("pods").VersionedParams(&opts, parameterCodec)
	if deadline, ok := ctx.Deadline(); ok {
		// The server stops the list too, not only the client.
		req = req.Timeout(time.Until(deadline))
	}
	err := req.Do(ctx).Into(out)
	return out, err
}

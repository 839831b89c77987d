package kubeapi

import (
	"encoding/json"
	"fmt"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The Status objects the API server answers errors with, and the wording of
// the faults a test asks for (Server.Fail).

func reasonOf(code int) metav1.StatusReason {
	switch code {
	case http.StatusUnauthorized:
		return metav1.StatusReasonUnauthorized
	case http.StatusForbidden:
		return metav1.StatusReasonForbidden
	case http.StatusGone:
		return metav1.StatusReasonExpired
	case http.StatusTooManyRequests:
		return metav1.StatusReasonTooManyRequests
	case http.StatusGatewayTimeout:
		return metav1.StatusReasonTimeout
	default:
		return metav1.StatusReasonInternalError
	}
}

func faultMessage(code int, namespace string) string {
	switch code {
	case http.StatusForbidden:
		return fmt.Sprintf(`pods is forbidden: User "system:serviceaccount:%s:lock-reaper" cannot list resource "pods" in API group "" in the namespace %q`, namespace, namespace)
	case http.StatusUnauthorized:
		return "Unauthorized"
	default:
		return fmt.Sprintf("the stand-in API server answers %d on purpose", code)
	}
}

func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(statusOf(code, reason, msg))
}

func statusOf(code int, reason metav1.StatusReason, msg string) *metav1.Status {
	return &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
		Code: int32(code), Reason: reason, Message: msg}
}

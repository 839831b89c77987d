package kubeapi

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Lists: pages of one consistent snapshot, as kube-apiserver serves them.

// continueToken is what a continue parameter carries: the snapshot's
// resourceVersion and the last name served.
type continueToken struct {
	RV    int64  `json:"rv"`
	After string `json:"after"`
}

func (s *Server) serveList(w http.ResponseWriter, r *http.Request, namespace string, sel labels.Selector) {
	q := r.URL.Query()
	limit, _ := strconv.Atoi(q.Get("limit"))
	s.mu.Lock()
	at, after := s.rv, ""
	if c := q.Get("continue"); c != "" {
		tok, err := decodeContinue(c)
		if err != nil {
			s.mu.Unlock()
			writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "invalid continue token: "+err.Error())
			return
		}
		if tok.RV < s.compacted {
			s.mu.Unlock()
			s.expired.Add(1)
			writeStatus(w, http.StatusGone, metav1.StatusReasonExpired, "The provided continue parameter is too old to display a consistent list result. "+
				"You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results.")
			return
		}
		at, after = tok.RV, tok.After
	} else if v := q.Get("resourceVersion"); v != "" && v != "0" && q.Get("resourceVersionMatch") == string(metav1.ResourceVersionMatchExact) {
		n, err := strconv.ParseInt(v, 10, 64)
		switch {
		case err != nil:
			s.mu.Unlock()
			writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "invalid resourceVersion "+v)
			return
		case n < s.compacted:
			s.mu.Unlock()
			s.expired.Add(1)
			writeStatus(w, http.StatusGone, metav1.StatusReasonExpired, fmt.Sprintf("The resourceVersion for the provided list is too old. (%d, oldest %d)", n, s.compacted))
			return
		case n <= s.rv:
			at = n
		}
	}
	state := s.stateAt(at)
	s.mu.Unlock()

	var keys []string
	for k, p := range state {
		if p.Namespace == namespace && sel.Matches(labels.Set(p.Labels)) && p.Name > after {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	list := corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
	list.ResourceVersion = strconv.FormatInt(at, 10)
	if limit > 0 && len(keys) > limit {
		remaining := int64(len(keys) - limit)
		keys = keys[:limit]
		list.Continue = encodeContinue(continueToken{RV: at, After: state[keys[limit-1]].Name})
		list.RemainingItemCount = &remaining
	}
	list.Items = make([]corev1.Pod, 0, len(keys))
	for _, k := range keys {
		list.Items = append(list.Items, *state[k])
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&list)
}

func encodeContinue(t continueToken) string {
	b, _ := json.Marshal(t)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeContinue(s string) (continueToken, error) {
	var t continueToken
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &t)
	}
	return t, err
}

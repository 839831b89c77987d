// Package webtest holds what the tests of the HTTP pages share: the status
// page's own tests and the command line's, which serve the same pages.
package webtest

import (
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// Do sends a request with method to url and returns the response's status
// and body; any transport error fails t.
func Do(t *testing.T, method, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

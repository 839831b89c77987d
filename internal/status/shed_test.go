package status

import (
	"math"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/sim"
)

func TestMustShed(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		holdings int
		limit    int64
		want     bool
	}{
		{"no limit", 10_000_000, math.MaxInt64, false},
		{"no limit read", 10_000_000, 0, false},
		{"the chart's 128Mi, 200,000 holdings", 200_000, 102 << 20, true},
		{"the chart's 128Mi, 20,000 holdings", 20_000, 102 << 20, false},
		{"just over a quarter", 1025, 4 << 20, true},
		{"just a quarter", 1024, 4 << 20, false},
	} {
		require.Equal(t, c.want, mustShed(c.holdings, c.limit), c.name)
	}
}

// Under a memory limit too small to keep the view beside the next
// snapshot, Shed lets the holdings go before the next inspection reads:
// the overview, owners and queue still answer from the summaries and say
// so, the holdings and task pages answer 503 with Retry-After, and the
// next published view is whole again. Without a limit nothing is shed.
func TestShedKeepsSummariesUntilTheNextView(t *testing.T) {
	f := newFixture(t, sim.SmallIncident())
	before := f.inspect()
	holdings := len(before.Holdings())
	require.Positive(t, holdings)

	softMemoryLimit = func() int64 { return math.MaxInt64 }
	t.Cleanup(func() { softMemoryLimit = defaultSoftMemoryLimit })
	f.srv.Shed()
	require.Same(t, before, f.srv.View(), "no limit: the view is kept whole")
	require.Same(t, before.In, f.srv.Inspection(), "the doctor judges the view's inspection")

	softMemoryLimit = func() int64 { return int64(holdings) * viewBytesPerHolding * 2 }
	f.srv.Shed()
	v := f.srv.View()
	require.NotNil(t, v.ShedAt)
	require.Empty(t, v.Holdings(), "the holdings are let go")
	require.Equal(t, holdings, v.HoldingCount())
	require.Equal(t, before.Blocked, v.Blocked)
	f.srv.Shed()
	require.Same(t, v, f.srv.View(), "shed once")
	require.Nil(t, f.srv.Inspection(), "a shed view keeps no inspection whole")

	code, body := f.get("/")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `id="shed"`)
	require.Contains(t, body, "for the next inspection to read its own: both would not fit the memory limit")
	require.Contains(t, body, `<a href="/holdings">`+num(holdings)+`</a>`)
	for _, path := range []string{"/owners", "/queue", "/queue?blocked=1"} {
		code, _ := f.get(path)
		require.Equal(t, http.StatusOK, code, path)
	}
	for _, path := range []string{"/holdings", "/holdings?owner=" + url.QueryEscape(f.inc.DeadOwner), "/tasks/" + f.inc.Cancel[0]} {
		resp, err := http.Get(f.web.URL + path)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, path)
		require.Equal(t, "5", resp.Header.Get("Retry-After"), path)
	}

	after := f.inspect()
	require.Nil(t, after.ShedAt)
	require.Len(t, after.Holdings(), holdings)
	code, _ = f.get("/holdings")
	require.Equal(t, http.StatusOK, code)
}

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lock-reaper/lock-reaper/reaper/history"
)

// PageFetches is what a daemon's status page answered while it was
// measured: every page a person opens in an incident, fetched over and over
// during the passes and between them.
type PageFetches struct {
	Rounds  int `json:"rounds"`
	Fetched int `json:"fetched"`
	// Refreshing counts the 503s of a view shed for the next read, which
	// the holdings and task pages answer by design.
	Refreshing int `json:"refreshing"`
	// Failed counts the fetches that got no answer or another error status.
	Failed       int    `json:"failed"`
	LargestBytes int64  `json:"largest_bytes"`
	LargestPage  string `json:"largest_page"`
}

// pageRoundPause is the pause between two rounds of every page: a person
// reloading, not a load test.
const pageRoundPause = 250 * time.Millisecond

// statusPages are the pages fetched each round; the task page is added
// once a task is known.
var statusPages = []string{"/", "/holdings", "/holdings?verdict=owner-dead&page=2000", "/queue", "/owners", "/passes"}

// fetchPages finds the daemon's address in its stderr (status's banner, or
// run's "daemon started" log line) and fetches every page in rounds for
// span, or until the returned function is called, which gives what was
// fetched.
func fetchPages(ctx context.Context, span time.Duration, stderrPath, taskID string, logf func(string, ...any)) func() PageFetches {
	ctx, cancel := context.WithTimeout(ctx, span)
	var (
		mu  sync.Mutex
		got PageFetches
		wg  sync.WaitGroup
	)
	pages := append([]string(nil), statusPages...)
	if taskID != "" {
		pages = append(pages, "/tasks/"+taskID)
	}
	client := &http.Client{Timeout: 60 * time.Second}
	wg.Add(1)
	go func() {
		defer wg.Done()
		base := waitForAddress(ctx, stderrPath)
		if base == "" {
			return
		}
		for ctx.Err() == nil {
			for _, p := range pages {
				n, code, err := fetchPage(ctx, client, base+p)
				if ctx.Err() != nil {
					return
				}
				mu.Lock()
				got.Fetched++
				switch {
				case err != nil || code != http.StatusOK && code != http.StatusServiceUnavailable:
					got.Failed++
					if got.Failed == 1 {
						logf("GET %s: %d %v", p, code, err)
					}
				case code == http.StatusServiceUnavailable:
					got.Refreshing++
				}
				if n > got.LargestBytes {
					got.LargestBytes, got.LargestPage = n, p
				}
				mu.Unlock()
			}
			mu.Lock()
			got.Rounds++
			mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(pageRoundPause):
			}
		}
	}()
	return func() PageFetches {
		cancel()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return got
	}
}

// fetchPage reads one page to the end, keeping only its length.
func fetchPage(ctx context.Context, client *http.Client, url string) (int64, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	return n, resp.StatusCode, err
}

// waitForAddress reads the daemon's stderr until it says where it serves
// the page; "" when ctx ends first.
func waitForAddress(ctx context.Context, path string) string {
	for {
		if base := addressIn(path); base != "" {
			return base
		}
		select {
		case <-ctx.Done():
			return ""
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// addressIn finds the page's base URL in a stderr written so far.
func addressIn(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 0, 64<<10), 16<<20)
	const banner = "lock-reaper status: serving the status page on "
	for s.Scan() {
		line := s.Text()
		if rest, ok := strings.CutPrefix(line, banner); ok {
			url, _, _ := strings.Cut(rest, " ")
			return strings.TrimSuffix(url, "/")
		}
		var l struct {
			Msg  string `json:"msg"`
			Addr string `json:"addr"`
		}
		if json.Unmarshal(s.Bytes(), &l) == nil && l.Msg == "daemon started" && l.Addr != "" {
			return "http://" + l.Addr
		}
	}
	return ""
}

// foreignEntryBytes is the size of each entry of a history of passes
// written by someone else (-foreign-history): far beyond any pass's own.
const foreignEntryBytes = 2 << 20

// writeForeignHistory pushes n entries of foreignEntryBytes into the
// history of passes of the benchmark's own Redis database, as anyone with
// write access to the reaper's prefix could: valid JSON, dated now, with an
// error message of 2 MB. The returned function removes the list.
func writeForeignHistory(ctx context.Context, rdb *redis.Client, n int) (func(), error) {
	key := history.Key(history.DefaultPrefix)
	e := history.Entry{At: time.Now().UTC(), Mode: "once", Error: strings.Repeat("x", foreignEntryBytes)}
	b, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	for range n {
		if err := rdb.RPush(ctx, key, b).Err(); err != nil {
			return nil, fmt.Errorf("write the foreign history: %w", err)
		}
	}
	return func() { _ = rdb.Del(context.WithoutCancel(ctx), key).Err() }, nil
}

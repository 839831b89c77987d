package reaper_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// scriptWork is what the MONITOR of a test-started Redis saw the script
// calls do, counted in commands, not in time.
type scriptWork struct {
	// Calls counts the script calls (EVAL, EVALSHA); MostPages is the most
	// SSCAN pages one of them walked, MostCommands the most commands one
	// of them ran.
	Calls, MostPages, MostCommands int
	// Pages counts the SSCAN pages of every script call together.
	Pages int
	// OverCount lists the SSCANs, in a script or not, whose COUNT is over
	// the page size or missing (a page of ten).
	OverCount []string
	// WholeSet lists the commands that read or combine a registry whole.
	WholeSet []string
}

// wholeSetCommands read or combine sets whole.
var wholeSetCommands = map[string]bool{"SMEMBERS": true, "SINTER": true, "SUNION": true, "SDIFF": true,
	"SINTERSTORE": true, "SUNIONSTORE": true, "SDIFFSTORE": true, "SORT": true, "SORT_RO": true}

// monitorScripts starts a MONITOR of the server at addr and returns the
// function that ends it and says what the commands since did. MONITOR
// shows a script call's line, then the commands the script runs, and no
// other client's command comes in between: a script blocks the server.
func monitorScripts(t *testing.T, addr string, rdb *redis.Client, pageSize int) func() scriptWork {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	_, err = conn.Write([]byte("MONITOR\r\n"))
	require.NoError(t, err)
	rd := bufio.NewReaderSize(conn, 1<<20)
	ok, err := rd.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "+OK\r\n", ok)
	marker := fmt.Sprintf("monitor-end-%d", time.Now().UnixNano())
	done := make(chan scriptWork, 1)
	errs := make(chan error, 1)
	go func() {
		var w scriptWork
		inCall, pages, commands := false, 0, 0
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				errs <- err
				return
			}
			// +1796693923.267350 [0 lua] "SSCAN" "key" "0" "COUNT" "1000"
			open, end := strings.IndexByte(line, '['), strings.Index(line, "] \"")
			if open < 0 || end < open {
				continue
			}
			args := strings.Split(strings.TrimSuffix(strings.TrimRight(line[end+3:], "\r\n"), `"`), `" "`)
			name := strings.ToUpper(args[0])
			if !strings.HasSuffix(line[open:end], " lua") {
				if inCall {
					w.MostPages, w.MostCommands = max(w.MostPages, pages), max(w.MostCommands, commands)
				}
				inCall, pages, commands = name == "EVALSHA" || name == "EVAL", 0, 0
				if inCall {
					w.Calls++
				}
				if name == "ECHO" && len(args) > 1 && args[1] == marker {
					done <- w
					return
				}
			} else if inCall {
				commands++
			}
			switch {
			case name == "SSCAN":
				if inCall {
					pages++
					w.Pages++
				}
				if n := countArg(args); n <= 0 || n > pageSize {
					w.OverCount = append(w.OverCount, strings.Join(args, " "))
				}
			case wholeSetCommands[name] && strings.Contains(line, redislocks.OwnerLocksPrefix):
				w.WholeSet = append(w.WholeSet, strings.Join(args, " "))
			}
		}
	}()
	return func() scriptWork {
		t.Helper()
		require.NoError(t, rdb.Echo(context.Background(), marker).Err())
		select {
		case w := <-done:
			return w
		case err := <-errs:
			t.Fatalf("MONITOR ended before its marker: %v", err)
		case <-time.After(5 * time.Minute):
			t.Fatal("MONITOR: the marker did not come")
		}
		return scriptWork{}
	}
}

// countArg is an SSCAN's COUNT, 0 when it has none.
func countArg(args []string) int {
	for i := 2; i+1 < len(args); i++ {
		if strings.EqualFold(args[i], "COUNT") {
			n, _ := strconv.Atoi(args[i+1])
			return n
		}
	}
	return 0
}

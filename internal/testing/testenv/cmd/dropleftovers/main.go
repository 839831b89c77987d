// Command dropleftovers drops, on the test PostgreSQL server
// (REAPER_TEST_DATABASE_URL), what the tests left behind: the databases of
// test processes that were killed before their cleanup, and the schema
// template when no test runs (testenv.DropLeftovers). `make test` runs it
// before and after the tests. It drops nothing else.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l, err := testenv.DropLeftovers(ctx, testenv.DatabaseURL())
	if len(l.Dropped) > 0 {
		fmt.Printf("test databases left behind, dropped: %s\n", strings.Join(l.Dropped, " "))
	}
	if len(l.Unowned) > 0 {
		fmt.Printf("test databases named before their names carried their test process, left alone (drop them by hand when no test runs): %s\n",
			strings.Join(l.Unowned, " "))
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "dropleftovers: %v\n", err)
		os.Exit(1)
	}
}

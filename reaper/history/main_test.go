package history_test

import (
	"testing"

	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
)

func TestMain(m *testing.M) {
	testenv.VerifyTestMain(m)
}

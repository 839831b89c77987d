package cli

import "github.com/lock-reaper/lock-reaper/reaper"

// failureCode is the exit code of a read that failed: 2 when the failure is
// the configuration's (it will not go away by retrying), else 1.
func failureCode(err error) int {
	if isConfigurationFailure(err) {
		return reaper.ExitUsage
	}
	return reaper.ExitFailed
}

func isConfigurationFailure(error) bool { return false }

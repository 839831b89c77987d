package testenv

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal makes the kernel end the server when the thread that
// started it ends, so no test server outlives its test process.
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

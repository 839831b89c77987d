package redisserver

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal makes the kernel end the server when the thread that
// started it ends, so no server outlives the process that started it.
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

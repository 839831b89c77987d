//go:build unix

package redisserver

import (
	"os/exec"
	"syscall"
)

// setOwnGroup starts the server in a process group of its own, out of the
// terminal's foreground group: a Ctrl-C typed at the program that started
// it reaches that program, which stops or keeps the server, and not the
// server itself.
func setOwnGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

//go:build !linux

package redisserver

import "os/exec"

// setParentDeathSignal has no equivalent here: the server ends with Stop.
func setParentDeathSignal(*exec.Cmd) {}

//go:build !unix

package redisserver

import "os/exec"

// setOwnGroup has no equivalent here: a console's Ctrl-C is the program's.
func setOwnGroup(*exec.Cmd) {}

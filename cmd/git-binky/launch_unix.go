//go:build unix

package main

import (
	"os"
	"syscall"
)

// launch replaces this process with binky, so that binky has the streams,
// the signals and the exit code to itself.
func launch(bin string, args []string) int {
	err := syscall.Exec(bin, append([]string{bin}, args...), binkyEnv())
	os.Stderr.WriteString("git-binky: run " + bin + ": " + err.Error() + "\n")
	return 1
}

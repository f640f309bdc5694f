package main

import (
	"errors"
	"os"
	"os/exec"
	"os/signal"
)

// launch runs binky with this process's streams and returns its exit code:
// Windows has no exec. Ctrl-C reaches every process on the console, so this
// one leaves it to binky and waits for it.
func launch(bin string, args []string) int {
	signal.Ignore(os.Interrupt)
	cmd := exec.Command(bin, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = binkyEnv()
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.ExitCode()
	}
	os.Stderr.WriteString("git-binky: run " + bin + ": " + err.Error() + "\n")
	return 1
}

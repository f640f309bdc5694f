//go:build !linux && !darwin

package main

// stdoutIsTerminal is not asked here: as if it were one, so that binky
// answers every env (it knows this platform's terminals).
func stdoutIsTerminal() bool { return true }

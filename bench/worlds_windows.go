//go:build windows

package main

import "errors"

// benchWorlds runs a PostgreSQL per world as the postgres account and reads
// each one's memory from /proc: on Windows it only says so.
func benchWorlds(*bench) error {
	return errors.New("the worlds table runs on Linux only (it reads /proc and runs PostgreSQL as its own account)")
}

//go:build windows

package main

import "errors"

// The worlds, mysql and mongodb tables run servers per world as their own
// accounts and read each one's memory from /proc: on Windows they only say
// so.
var errUnixOnly = errors.New("this table runs on Linux only (it reads /proc and runs servers as their own accounts)")

func benchWorlds(*bench) error  { return errUnixOnly }
func benchMySQL(*bench) error   { return errUnixOnly }
func benchMongoDB(*bench) error { return errUnixOnly }

// loadDocs is the mongodb table's seed command.
func loadDocs(string, int) error { return errUnixOnly }

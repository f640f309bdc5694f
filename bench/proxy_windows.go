package main

import "errors"

// benchProxy runs wrk, nginx and Caddy and reads CPU time from /proc: on
// Windows it only says so.
func benchProxy(*bench) error {
	return errors.New("the proxy table runs on Linux only (wrk, nginx and /proc)")
}

// The launcher lives for milliseconds, so the runtime's GOMAXPROCS
// updater, a goroutine started before main that wakes a second thread at
// once, never gets to run and costs its start (as in binky: godebug.go
// there, docs/performance.md round 9).

//go:debug updatemaxprocs=0

package main

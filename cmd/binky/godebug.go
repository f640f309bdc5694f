// A command lives for milliseconds, so the runtime's GOMAXPROCS updater,
// a goroutine started before main that wakes a second thread at once,
// costs env ~0.3 ms of ~9 on the bench VM and never gets to run
// (docs/performance.md, round 9). The daemon, which lives for days, keeps
// it.

//go:debug updatemaxprocs=0

package main

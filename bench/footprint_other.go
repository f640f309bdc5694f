//go:build unix && !linux

package main

// footprint needs Linux's /proc (map_files, smaps_rollup).
func footprint([]int) (uint64, bool) { return 0, false }

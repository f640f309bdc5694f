package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"syscall"
	"unsafe"
)

// footprint is the memory a server's processes hold, counted once: every
// live process's share of anonymous memory (Pss_Anon: a forked child's
// copy-on-write pages are its parent's too), plus the resident pages of
// the shared memory its first process maps (PostgreSQL's buffers and the
// rest). RSS and PSS miss shared pages that only exited processes touched
// (a connection that copied a database has gone, the buffers it filled
// stay), and RSS counts the others once per process that maps them. It
// needs root (map_files), and says so by ok.
func footprint(pids []int) (bytes uint64, ok bool) {
	if len(pids) == 0 {
		return 0, false
	}
	for _, pid := range pids {
		bytes += smapsRollup(pid)["Pss_Anon:"]
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pids[0]))
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		// Shared mappings (the 's' of "rw-s") of memory, not of files on
		// disk: the main segment (/dev/zero, or /anon_hugepage with huge
		// pages), System V ones and /dev/shm.
		if len(fields) < 6 || !strings.HasSuffix(fields[1], "s") {
			continue
		}
		name := strings.Join(fields[5:], " ")
		if !strings.HasPrefix(name, "/dev/zero") && !strings.HasPrefix(name, "/anon_hugepage") && !strings.HasPrefix(name, "/SYSV") && !strings.HasPrefix(name, "/dev/shm/") {
			continue
		}
		// map_files names drop the zero padding /proc/<pid>/maps has.
		var lo, hi uint64
		if _, err := fmt.Sscanf(fields[0], "%x-%x", &lo, &hi); err != nil {
			return 0, false
		}
		n, err := residentPages(fmt.Sprintf("/proc/%d/map_files/%x-%x", pids[0], lo, hi), int(hi-lo))
		if err != nil {
			return 0, false
		}
		bytes += n
	}
	return bytes, true
}

// residentPages maps size bytes of the object behind a
// /proc/<pid>/map_files entry and counts the bytes of it in memory
// (mincore).
func residentPages(path string, size int) (uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	mem, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return 0, err
	}
	defer syscall.Munmap(mem)
	page := os.Getpagesize()
	vec := make([]byte, (size+page-1)/page)
	if _, _, e := syscall.Syscall(syscall.SYS_MINCORE, uintptr(unsafe.Pointer(&mem[0])), uintptr(size), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		return 0, e
	}
	var n uint64
	for _, v := range vec {
		n += uint64(v & 1)
	}
	return n * uint64(page), nil
}

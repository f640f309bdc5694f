package daemon

import (
	"bufio"
	"bytes"
	"errors"
	"strconv"
	"strings"
)

// parseVMStat reads the output of macOS's vm_stat and returns the bytes a
// new process could have without swapping: free, speculative, inactive and
// purgeable pages (what Linux's MemAvailable approximates too). It lives
// outside memory_darwin.go so that its test runs on every system.
func parseVMStat(out []byte) (uint64, error) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	if !sc.Scan() {
		return 0, errors.New("vm_stat printed nothing")
	}
	// Mach Virtual Memory Statistics: (page size of 16384 bytes)
	head := sc.Text()
	_, rest, ok := strings.Cut(head, "page size of ")
	if !ok {
		return 0, errors.New("vm_stat: no page size in " + strconv.Quote(head))
	}
	page, err := strconv.ParseUint(strings.Fields(rest)[0], 10, 64)
	if err != nil || page == 0 {
		return 0, errors.New("vm_stat: bad page size in " + strconv.Quote(head))
	}
	var pages uint64
	seen := 0
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch name {
		case "Pages free", "Pages speculative", "Pages inactive", "Pages purgeable":
			n, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(val), "."), 10, 64)
			if err != nil {
				return 0, errors.New("vm_stat: bad count in " + strconv.Quote(sc.Text()))
			}
			pages += n
			seen++
		}
	}
	if seen == 0 {
		return 0, errors.New("vm_stat: no page counts")
	}
	return pages * page, nil
}

package managed

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// listensOn reports whether process pid, or a process it started (the
// rabbitmq-server script's node), holds a socket listening on port, from
// /proc: the listening sockets of the port (/proc/net/tcp, tcp6) against
// the sockets those processes have open. known is false when /proc cannot
// tell (not mounted, the file descriptors unreadable).
func listensOn(pid, port int) (owns, known bool) {
	inodes := map[string]bool{}
	read := false
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		read = true
		s := bufio.NewScanner(f)
		s.Scan() // the header
		for s.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fields := strings.Fields(s.Text())
			if len(fields) < 10 || fields[3] != "0A" { // TCP_LISTEN
				continue
			}
			_, hexPort, ok := strings.Cut(fields[1], ":")
			if p, err := strconv.ParseUint(hexPort, 16, 16); ok && err == nil && int(p) == port {
				inodes[fields[9]] = true
			}
		}
		f.Close()
	}
	if !read {
		return false, false
	}
	if len(inodes) == 0 {
		return false, true // nothing listens there
	}
	owns, known = holds(pid, inodes)
	if owns || !known {
		return owns, known
	}
	for _, child := range descendants(pid) {
		if o, _ := holds(child, inodes); o {
			return true, true
		}
	}
	return false, true
}

// holds reports whether pid has one of the sockets open.
func holds(pid int, sockets map[string]bool) (owns, known bool) {
	fds := fmt.Sprintf("/proc/%d/fd", pid)
	entries, err := os.ReadDir(fds)
	if err != nil {
		return false, false
	}
	for _, e := range entries {
		target, err := os.Readlink(filepath.Join(fds, e.Name()))
		if err != nil {
			continue
		}
		if inode, ok := strings.CutPrefix(target, "socket:["); ok && sockets[strings.TrimSuffix(inode, "]")] {
			return true, true
		}
	}
	return false, true
}

// descendants are the processes pid started, and theirs, from each
// process's parent in /proc/<pid>/stat.
func descendants(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			continue
		}
		if pp, err := strconv.Atoi(f[1]); err == nil {
			children[pp] = append(children[pp], p)
		}
	}
	var out []int
	for queue := append([]int(nil), children[pid]...); len(queue) > 0; queue = queue[1:] {
		out = append(out, queue[0])
		queue = append(queue, children[queue[0]]...)
	}
	return out
}

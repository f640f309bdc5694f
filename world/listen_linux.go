package world

import (
	"bufio"
	"io"
	"os"
	"strconv"
	"strings"
)

// ListensOnEveryInterface reports whether a socket listens on port at
// every interface (0.0.0.0 or ::), where other machines of the network
// reach it: a world's service is meant for this machine, and binky's
// proxy and probes dial 127.0.0.1. It reads /proc/net/tcp and tcp6.
func ListensOnEveryInterface(port int) bool {
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		found := listensOnEveryInterface(f, port)
		f.Close()
		if found {
			return true
		}
	}
	return false
}

// listensOnEveryInterface reads one table in /proc/net/tcp's form: a
// header, then a socket a line, its local address hex IP:port, its state
// 0A when it listens.
func listensOnEveryInterface(table io.Reader, port int) bool {
	want := strings.ToUpper(strconv.FormatInt(int64(port), 16))
	for len(want) < 4 {
		want = "0" + want
	}
	s := bufio.NewScanner(table)
	s.Scan() // the header
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 4 || fields[3] != "0A" {
			continue
		}
		addr, p, ok := strings.Cut(fields[1], ":")
		if ok && p == want && strings.Trim(addr, "0") == "" {
			return true
		}
	}
	return false
}

package world

import (
	"strings"
	"testing"
)

// Tables as /proc/net/tcp and tcp6 print them (no test listens on every
// interface: tests bind 127.0.0.1 only).
const (
	tcpTable = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:113B 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 101 1 0000000000000000 100 0 0 10 0
   1: 0100007F:113C 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 102 1 0000000000000000 100 0 0 10 0
   2: 00000000:113D 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 103 1 0000000000000000 100 0 0 10 0
`
	tcp6Table = `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 104 1 0000000000000000 100 0 0 10 0
   1: 00000000000000000000000001000000:1F91 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 105 1 0000000000000000 100 0 0 10 0
`
)

func TestListensOnEveryInterfaceTellsLoopbackFromEveryInterface(t *testing.T) {
	for _, c := range []struct {
		table string
		port  int
		want  bool
	}{
		{tcpTable, 0x113B, true},   // 0.0.0.0, listening
		{tcpTable, 0x113C, false},  // 127.0.0.1
		{tcpTable, 0x113D, false},  // 0.0.0.0, but a connection, not a listener
		{tcpTable, 4000, false},    // nothing there
		{tcp6Table, 0x1F90, true},  // ::
		{tcp6Table, 0x1F91, false}, // ::1
	} {
		if got := listensOnEveryInterface(strings.NewReader(c.table), c.port); got != c.want {
			t.Errorf("port %d: %v, want %v", c.port, got, c.want)
		}
	}
}

package world

import (
	"encoding/json"
	"slices"

	"github.com/git-binky/git-binky/envsnap"
)

// OpenEnvSnapshot opens the env snapshot (envsnap) of the world of the
// worktree dir and name place, as this process's build prints it, ready
// for the full path's Save.
func OpenEnvSnapshot(home Home, dir, name string) *envsnap.Snapshot {
	return envsnap.Open(envsnap.Options{Home: home.Dir, Dir: dir, Name: name, PortsOf: recordPorts})
}

// recordPorts lists the ports a record holds, sorted: their leases are
// inputs too. Decoding only the ports keeps this off the fast path's cost.
func recordPorts(record []byte) ([]int, bool) {
	var r struct {
		Ports map[string]int `json:"ports"`
	}
	if err := json.Unmarshal(record, &r); err != nil {
		return nil, false
	}
	var ports []int
	for _, p := range r.Ports {
		ports = append(ports, p)
	}
	slices.Sort(ports)
	return slices.Compact(ports), true
}

package world

import (
	"os"

	"github.com/git-binky/git-binky/logfile"
)

// ServiceLog is one service's log as `logs` shows it: its last lines, or a
// page from a cursor, and where the next page starts.
type ServiceLog struct {
	Lines []string `json:"lines"`
	// Next is the byte offset to pass as offset to get what was written
	// after these lines.
	Next int64 `json:"next_offset"`
}

// Logs reads the logs of the world's services (or only service): the last
// n lines of each, or, with offset >= 0, up to n lines from that offset. A
// service with no log yet has no lines.
func (w *World) Logs(service string, n int, offset int64) (map[string]ServiceLog, error) {
	paths, err := w.LogPaths(service)
	if err != nil {
		return nil, err
	}
	out := make(map[string]ServiceLog, len(paths))
	// One answer's bound, shared by its services' logs.
	budget := logfile.MaxTailBytes / max(1, len(paths))
	for svc, p := range paths {
		l := ServiceLog{Lines: []string{}}
		if offset >= 0 {
			lines, next, err := logfile.PageWithin(p, offset, n, budget)
			if err != nil {
				return nil, err
			}
			l.Next = next
			if lines != nil {
				l.Lines = lines
			}
		} else {
			if lines := logfile.TailWithin(p, n, budget); lines != nil {
				l.Lines = lines
			}
			if fi, err := os.Stat(p); err == nil {
				l.Next = fi.Size()
			}
		}
		out[svc] = l
	}
	return out, nil
}

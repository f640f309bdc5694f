package main

import "io"

// lineEnd passes writes through and remembers whether the last one left a
// line open (no trailing newline).
type lineEnd struct {
	w    io.Writer
	open bool
}

func (l *lineEnd) Write(p []byte) (int, error) {
	if len(p) > 0 {
		l.open = p[len(p)-1] != '\n'
	}
	return l.w.Write(p)
}

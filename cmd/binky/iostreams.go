package main

import (
	"encoding/json"
	"io"
	"os"
	"strconv"

	"golang.org/x/term"
)

// IOStreams is the terminal: it owns the three streams and decides, in
// this one place, whether each output stream is a TTY, whether it may be
// coloured, how wide it is and how JSON is written. Commands get it from
// App; tests build one over buffers and force a TTY and colour on to check
// what a person at a terminal sees.
type IOStreams struct {
	In       io.Reader
	Out, Err io.Writer

	outTTY, errTTY     bool
	outColor, errColor bool
	width              int
}

// newIOStreams looks at the real streams and the environment once:
// colour only on a TTY, never with NO_COLOR set (to anything) or TERM=dumb.
func newIOStreams(in io.Reader, out, errw io.Writer, getenv func(string) (string, bool)) *IOStreams {
	s := &IOStreams{In: in, Out: out, Err: errw, outTTY: isTerminal(out), errTTY: isTerminal(errw)}
	_, noColor := getenv("NO_COLOR")
	term, _ := getenv("TERM")
	colorOK := !noColor && term != "dumb"
	s.outColor, s.errColor = colorOK && s.outTTY, colorOK && s.errTTY
	if c, ok := getenv("COLUMNS"); ok {
		if n, err := strconv.Atoi(c); err == nil && n > 0 {
			s.width = n
		}
	}
	return s
}

// isTerminal reports whether w is a terminal. Asking the terminal driver,
// not the file's mode: /dev/null is a character device too, and
// `git binky env >/dev/null` is no person reading. SyscallConn, not Fd:
// Fd would put the stream into blocking mode.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	tty := false
	if err := rc.Control(func(fd uintptr) { tty = term.IsTerminal(int(fd)) }); err != nil {
		return false
	}
	return tty
}

// IsStdoutTTY reports whether Out is a terminal: tables and hidden
// passwords are for people, plain lines for pipes.
func (s *IOStreams) IsStdoutTTY() bool { return s.outTTY }

// IsStderrTTY reports whether Err is a terminal (progress is drawn there).
func (s *IOStreams) IsStderrTTY() bool { return s.errTTY }

// SetStdoutTTY forces the answer of IsStdoutTTY (for tests).
func (s *IOStreams) SetStdoutTTY(on bool) { s.outTTY = on }

// SetStderrTTY forces the answer of IsStderrTTY (for tests).
func (s *IOStreams) SetStderrTTY(on bool) { s.errTTY = on }

// SetColorEnabled forces colour on or off on both output streams (for tests).
func (s *IOStreams) SetColorEnabled(on bool) { s.outColor, s.errColor = on, on }

// ColorEnabled reports whether Out may be coloured.
func (s *IOStreams) ColorEnabled() bool { return s.outColor }

// Style colours text written to Out; the identity when colour is off.
func (s *IOStreams) Style() style { return style{s.outColor} }

// ErrStyle colours text written to Err; the identity when colour is off.
func (s *IOStreams) ErrStyle() style { return style{s.errColor} }

// TerminalWidth is the width of Out in columns: $COLUMNS when set, 80 on
// a terminal, and 0 (no limit) for a pipe.
func (s *IOStreams) TerminalWidth() int {
	switch {
	case s.width > 0:
		return s.width
	case s.outTTY:
		return 80
	}
	return 0
}

// WriteJSON writes v to Out as indented JSON: the one exporter every
// --json flag goes through.
func (s *IOStreams) WriteJSON(v any) error {
	enc := json.NewEncoder(s.Out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

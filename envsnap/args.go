package envsnap

import "strings"

// Args are env's everyday forms: at most one of --dotenv, --shell and
// --json, and at most one worktree name.
type Args struct {
	Name   string
	Dotenv bool
	Shell  bool
	JSON   bool
}

// ParseArgs recognises env's everyday forms in a command line (args
// without the program's name) and says which options they mean. Anything
// else (help, a mistake, a flag spelt another way) is not recognised: the
// command tree answers it, so its errors and help are cobra's.
func ParseArgs(args []string) (Args, bool) {
	var a Args
	if len(args) == 0 || args[0] != "env" || len(args) > 3 {
		return a, false
	}
	formats := 0
	for _, arg := range args[1:] {
		switch {
		case arg == "--dotenv":
			a.Dotenv, formats = true, formats+1
		case arg == "--shell":
			a.Shell, formats = true, formats+1
		case arg == "--json":
			a.JSON, formats = true, formats+1
		case arg == "" || strings.HasPrefix(arg, "-") || a.Name != "":
			return Args{}, false
		default:
			a.Name = arg
		}
	}
	if formats > 1 {
		return Args{}, false
	}
	return a, true
}

// env's output formats, the keys of a snapshot's outputs.
const (
	Dotenv   = "dotenv"
	Shell    = "shell"
	JSON     = "json"
	Terminal = "terminal" // dotenv with the passwords hidden
)

// Format is the output format a asks for, given whether standard output
// is a terminal.
func (a Args) Format(stdoutTTY bool) string {
	switch {
	case a.JSON:
		return JSON
	case a.Shell:
		return Shell
	case a.Dotenv || !stdoutTTY:
		return Dotenv
	}
	return Terminal
}

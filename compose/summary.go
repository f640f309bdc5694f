package compose

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

// WriteSummary tells a person what init did: where it wrote, what it
// mapped, what it guessed, what it left to them, and which variables to
// set.
func WriteSummary(w io.Writer, out string, res Result) {
	var srcs []string
	for _, f := range res.Files {
		srcs = append(srcs, filepath.Base(f))
	}
	fmt.Fprintf(w, "wrote %s from %s\n", out, strings.Join(srcs, " + "))
	section := func(title string, lines []string) {
		if len(lines) == 0 {
			return
		}
		fmt.Fprintf(w, "\n%s (%d):\n", title, len(lines))
		for _, l := range lines {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
	section("mapped", res.Mapped)
	section(`guessed, marked "guessed:" in the file: check them`, res.Guessed)
	section(`left to you, marked "left to you:"`, res.Left)
	if len(res.Warnings) > 0 {
		var ws []string
		for _, d := range res.Warnings {
			ws = append(ws, d.String())
		}
		section("check warns", ws)
	}
	fmt.Fprintln(w)
	if len(res.Secrets) > 0 {
		fmt.Fprintf(w, "credentials kept out of the file (each is ${env.NAME}): %s\n", strings.Join(res.Secrets, ", "))
	}
	if len(res.SetEnv) > 0 {
		fmt.Fprintf(w, "set these before 'git binky up' (the file reads them; .env does not set them): %s\n", strings.Join(res.SetEnv, ", "))
	}
	fmt.Fprintln(w, "read it through, then: git binky check")
}

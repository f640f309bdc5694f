package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/git-binky/git-binky/api"
	"github.com/git-binky/git-binky/world"
)

// style colours text for a terminal; it is the identity when colour is off.
type style struct{ on bool }

func (s style) wrap(code, text string) string {
	if !s.on {
		return text
	}
	return "\033[" + code + "m" + text + "\033[0m"
}

// state colours a world's state (world.State) or a service's (the
// supervisor's healthy, unhealthy, crashed...): green for up, yellow for on
// the way or paused, red for broken.
func (s style) state(state string) string {
	switch state {
	case "healthy", string(world.StateRunning):
		return s.wrap("32", state)
	case string(world.StateStarting), string(world.StateSuspended), string(world.StateNew):
		return s.wrap("33", state)
	case "unhealthy", "crashed", string(world.StateFailed):
		return s.wrap("31", state)
	}
	if strings.HasPrefix(state, string(world.StateRunning)+": ") {
		return s.wrap("31", state) // running, a service crashed or unhealthy
	}
	return state
}

func (s style) ok(text string) string   { return s.wrap("32", "✓ ") + text }
func (s style) bold(text string) string { return s.wrap("1", text) }

// printServices writes one line per service: name, pid, port, state.
func printServices(w io.Writer, st style, wd api.World, indent string) {
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	for _, s := range wd.Services {
		pid := ""
		if s.PID != 0 {
			pid = fmt.Sprintf("pid %d", s.PID)
		}
		port := ""
		if s.Port != 0 {
			port = fmt.Sprintf(":%d", s.Port)
		}
		extra := []string{}
		if s.UptimeSeconds > 0 {
			extra = append(extra, "up "+(time.Duration(s.UptimeSeconds)*time.Second).String())
		}
		if s.Restarts > 0 {
			extra = append(extra, fmt.Sprintf("%d restarts", s.Restarts))
		}
		if s.ExitCode != nil && s.State != "healthy" {
			extra = append(extra, fmt.Sprintf("exit %d", *s.ExitCode))
		}
		if s.Message != "" && s.State != "healthy" {
			extra = append(extra, inertLines(s.Message, " / "))
		}
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\t%s\n", indent, s.Name, pid, port, st.state(s.State), strings.Join(extra, ", "))
	}
	// Ports of services that have no process (yet): env was run, not up.
	have := map[string]bool{}
	for _, s := range wd.Services {
		have[s.Name] = true
	}
	keys := make([]string, 0, len(wd.Ports))
	for k := range wd.Ports {
		if svc, _, _ := strings.Cut(k, "."); !have[svc] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		// A port held for a service this world has not started (outside
		// the group its up started, or env was run, not up).
		fmt.Fprintf(tw, "%s%s\t\t:%d\t%s\t\n", indent, strings.Replace(k, ".", " ", 1), wd.Ports[k], st.state("not started"))
	}
	tw.Flush()
}

// inertText is world.Inert for text of several lines, such as an error
// quoting a service's last output: line breaks and tabs stay, every other
// control character (an escape sequence's ESC, BEL, a carriage return that
// would write over the line) is shown as text. It is for what others wrote;
// binky's own colours (style) are added around it, never passed through it.
func inertText(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		cells := strings.Split(l, "\t")
		for j, c := range cells {
			cells[j] = world.Inert(c)
		}
		lines[i] = strings.Join(cells, "\t")
	}
	return strings.Join(lines, "\n")
}

// progress prints daemon events as they come, for people watching. A
// message can quote a service's output: it is shown as text (inertText).
func progress(w io.Writer, st style) func(api.Event) {
	return func(e api.Event) {
		switch {
		case e.Service != "" && e.State != "":
			msg := ""
			if e.Message != "" && e.State != "healthy" {
				msg = "  " + inertText(e.Message)
			}
			fmt.Fprintf(w, "  %s %s%s\n", e.Service, st.state(e.State), msg)
		case e.Message != "":
			fmt.Fprintf(w, "  %s\n", inertText(e.Message))
		}
	}
}

// inertLines is msg made inert (world.Inert) line by line, its lines
// joined with sep: a message holding a command's last output ("; last
// output:\n    ...") read as one line of \x0a escapes.
func inertLines(msg, sep string) string {
	lines := strings.Split(strings.TrimRight(msg, "\n"), "\n")
	for i, l := range lines {
		lines[i] = world.Inert(strings.TrimSpace(l))
	}
	return strings.Join(lines, sep)
}

package world

import (
	"fmt"
	"sort"
	"strings"
)

// Start order: the depends_on graph of a config, its cycles, and its groups.

// findCycle returns one depends_on cycle (first name repeated at the end), or nil.
func (c *Config) findCycle() []string {
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var stack []string
	var found []string
	var visit func(string) bool
	visit = func(n string) bool {
		color[n] = grey
		stack = append(stack, n)
		deps := append([]string(nil), c.Services[n].DependsOn...)
		sort.Strings(deps)
		for _, d := range deps {
			if _, ok := c.Services[d]; !ok {
				continue
			}
			switch color[d] {
			case grey:
				for i, s := range stack {
					if s == d {
						found = append(append([]string{}, stack[i:]...), d)
					}
				}
				return true
			case white:
				if visit(d) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[n] = black
		return false
	}
	for _, n := range c.ServiceNames() {
		if color[n] == white && visit(n) {
			return found
		}
	}
	return nil
}

// Order returns the services in an order where each comes after its
// dependencies (ties broken by name), restricted to only (plus their
// dependencies) when only is non-empty.
func (c *Config) Order(only []string) ([]string, error) {
	if cycle := c.findCycle(); cycle != nil {
		return nil, fmt.Errorf("dependency cycle: %s", strings.Join(cycle, " -> "))
	}
	want := map[string]bool{}
	var add func(string)
	add = func(n string) {
		if want[n] {
			return
		}
		want[n] = true
		for _, d := range c.Services[n].DependsOn {
			add(d)
		}
	}
	if len(only) == 0 {
		for n := range c.Services {
			want[n] = true
		}
	}
	for _, n := range only {
		if _, ok := c.Services[n]; !ok {
			return nil, fmt.Errorf("no service %q in %s", n, c.Path)
		}
		add(n)
	}
	var out []string
	done := map[string]bool{}
	var visit func(string)
	visit = func(n string) {
		if done[n] {
			return
		}
		done[n] = true
		deps := append([]string(nil), c.Services[n].DependsOn...)
		sort.Strings(deps)
		for _, d := range deps {
			visit(d)
		}
		out = append(out, n)
	}
	for _, n := range c.ServiceNames() {
		if want[n] {
			visit(n)
		}
	}
	return out, nil
}

// Group returns the services of a named group.
// HostGroups maps each service with a url that a plain up does not start
// (the file has a default group without it or what depends on it) to the
// first group by name that starts it, or to "" when no group does.
func (c *Config) HostGroups() map[string]string {
	def, ok := c.Groups["default"]
	if !ok {
		return nil // a plain up starts every service
	}
	starts := func(group []string) map[string]bool {
		in := map[string]bool{}
		if len(group) == 0 {
			return in // an empty group starts nothing
		}
		order, _ := c.Order(group)
		for _, n := range order {
			in[n] = true
		}
		return in
	}
	plain := starts(def)
	out := map[string]string{}
	for _, g := range sortedKeys(c.Groups) {
		for n := range starts(c.Groups[g]) {
			if _, done := out[n]; !done && !plain[n] && c.Services[n] != nil && c.Services[n].URL != "" {
				out[n] = g
			}
		}
	}
	for n, s := range c.Services {
		if _, done := out[n]; !done && !plain[n] && s.URL != "" && s.Adapter == "" {
			out[n] = ""
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func (c *Config) Group(name string) ([]string, error) {
	g, ok := c.Groups[name]
	if !ok {
		known := sortedKeys(c.Groups)
		if len(known) == 0 {
			return nil, fmt.Errorf("no group %q: %s has no [groups] table", name, c.Path)
		}
		return nil, fmt.Errorf("no group %q in %s (groups: %s)", name, c.Path, strings.Join(known, ", "))
	}
	return g, nil
}

package world

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// EnvRefs are the variables a service reads with ${env.X} and no default
// (${env.X:-value} has one), in its cmd, env, env_file, cwd, health,
// admin_url, migrate, seed and string options, sorted and deduplicated.
func (s *Service) EnvRefs() []string {
	seen := map[string]bool{}
	values := []string{}
	for _, f := range s.fields() {
		values = append(values, f.value)
	}
	for _, k := range sortedKeys(s.Options) {
		if str, ok := s.Options[k].(string); ok {
			values = append(values, str)
		}
	}
	for _, v := range values {
		for _, ref := range Tokens(v) {
			name, ok := strings.CutPrefix(ref, "env.")
			if !ok || name == "" || strings.Contains(name, ":-") {
				continue
			}
			seen[name] = true
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// UnsetEnv returns an error naming every ${env.X} (without a default)
// that service reads and that is not set when it is read, its process's
// environment built from base (the caller's) as ProcessEnv builds it: left
// literal, such a token became an app's admin password. A value of the
// service's env table reads the environment before the table's own
// values (and those before it), so `STRIPE_KEY = "${env.STRIPE_KEY}"`,
// as init writes credentials, needs STRIPE_KEY from the caller or an env
// file; the service's other fields (cmd, health, migrate...) read its
// whole environment, the table's values included. A missing env file is
// not this function's to report: it returns nil.
func (w *World) UnsetEnv(rec *Record, base []string, service string) error {
	s := w.Config.Services[service]
	if s == nil {
		return nil
	}
	unset := map[string]bool{}
	env, err := w.processEnv(w.Coordinates(rec), rec, base, service, unset)
	if err != nil {
		return nil
	}
	var missing, early, own []string
	for _, name := range s.EnvRefs() {
		if _, ok := env[name]; !ok || unset[name] {
			if _, inTable := s.Env[name]; inTable && unset[name] && !strings.Contains(s.Env[name], "${env."+name+"}") {
				early = append(early, fmt.Sprintf("${env.%s} (service %s)", name, service))
				continue
			}
			if w.Config.setsItself(name) {
				own = append(own, fmt.Sprintf("${env.%s} (service %s)", name, service))
				continue
			}
			missing = append(missing, fmt.Sprintf("${env.%s} (service %s)", name, service))
		}
	}
	var errs []error
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("%s: %s not set in the environment of the command that started this world: export it and run 'git binky up' again, or write a default like ${env.NAME:-value}",
			w.Config.Path, strings.Join(missing, ", ")))
	}
	if len(own) > 0 {
		// ${env.X} is the caller's environment, read when the world
		// starts: binky's own variables are not in it yet.
		errs = append(errs, fmt.Errorf("%s: %s read from the environment of the command that started this world, but binky sets it in the service's own: write ${self.port} or ${svc.field} (as ${db.url}), or $NAME in a command, which its shell reads when it starts",
			w.Config.Path, strings.Join(own, ", ")))
	}
	if len(early) > 0 {
		// Exporting it would hide the mistake: the shell's value, not the
		// table's, would be read.
		errs = append(errs, fmt.Errorf("%s: %s read in the env table before the table sets it (its values are filled in the order of their names): write the value itself there", w.Config.Path, strings.Join(early, ", ")))
	}
	return errors.Join(errs...)
}

// setsItself reports whether name is a variable binky sets in services'
// environments: PORT, and a service's <SVC>_... (its address, a slice's
// fields).
func (c *Config) setsItself(name string) bool {
	if name == "PORT" {
		return true
	}
	for _, n := range c.ServiceNames() {
		s := c.Services[n]
		if (s.Adapter != "" || s.HasPort()) && strings.HasPrefix(name, EnvStem(n)+"_") {
			return true
		}
	}
	return false
}

// listenRE finds a service choosing its own listen address in its cmd;
// compiled on first use, as check's other patterns are (env runs on every
// shell prompt).
var listenRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?:^|[\s='"])(0\.0\.0\.0|\[::\])(?::\d+)?(?:$|[\s'"/])`)
})

// listenKeys are env names apps read their listen address from.
var listenKeys = []string{"LISTEN_ADDR", "LISTEN_ADDRESS", "BIND_ADDR", "BIND_ADDRESS", "HOST", "HTTP_ADDR", "ADDR", "LISTEN"}

// listenProblems are check's warnings about a service that sets its own
// listen address: on every interface (0.0.0.0, ::), a world is reachable
// from the network; and an app that reads both PORT and its own address
// may prefer PORT and listen on *:PORT.
func (s *Service) listenProblems() []field {
	if s.Adapter != "" {
		return nil
	}
	var out []field
	portOn := s.HasPort() && (s.PortEnv == nil || *s.PortEnv)
	for _, k := range listenKeys {
		v, ok := s.Env[k]
		if !ok {
			continue
		}
		key := []string{"env", k}
		if strings.Contains(v, "0.0.0.0") || strings.Contains(v, "::") && !strings.Contains(v, "::1") {
			out = append(out, field{key, fmt.Sprintf("%s = %q listens on every interface: this world is then reachable from the network; binky's worlds are for loopback: use 127.0.0.1", k, v)})
		} else if portOn && strings.Contains(v, ":") {
			out = append(out, field{key, fmt.Sprintf("service %q sets its own listen address (%s) and binky also gives it PORT: an app that reads PORT may listen on *:PORT instead; add port_env = false to leave PORT out", s.Name, k)})
		}
	}
	if m := listenRE().FindStringSubmatch(s.Cmd); m != nil {
		out = append(out, field{[]string{"cmd"}, fmt.Sprintf("cmd listens on %s, every interface: this world is then reachable from the network; use 127.0.0.1 (binky's proxy and direct URLs reach it there)", m[1])})
	}
	return out
}

// createTableRE finds a CREATE TABLE (or INDEX, SCHEMA...) that fails when
// it runs twice; compiled on first use.
var createTableRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)\bcreate\s+(?:unique\s+)?(table|index|schema|type|extension|sequence|view)\s+(?:if\s+not\s+exists\b)?`)
})

// rerunProblem warns of a migrate command that cannot run twice: binky
// runs migrate on clones of the golden template (for the branch's own
// migrations), so it must be a no-op when nothing is pending, as migration
// tools are.
func (s *Service) rerunProblem() string {
	if s.CloneFrom != "golden" || s.Migrate == "" {
		return ""
	}
	for _, m := range createTableRE().FindAllStringSubmatch(s.Migrate, -1) {
		if !strings.Contains(strings.ToLower(m[0]), "if not exists") {
			return fmt.Sprintf("migrate runs again on clones of the golden template (for this branch's migrations), and CREATE %s without IF NOT EXISTS fails the second time: write CREATE %s IF NOT EXISTS, or use a migration tool", strings.ToUpper(m[1]), strings.ToUpper(m[1]))
		}
	}
	return ""
}

// shellEnv is what ${env.X} will read for service s when the command
// that runs check starts the world: this process's environment and the
// env files (those that can be read).
func (c *Config) shellEnv(s *Service) map[string]string {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	for _, f := range []string{c.Project.EnvFile, s.EnvFile} {
		if f == "" || c.Path == "" {
			continue
		}
		if fe, err := ReadEnvFile(filepath.Join(filepath.Dir(c.Path), f)); err == nil {
			for k, v := range fe {
				env[k] = v
			}
		}
	}
	return env
}

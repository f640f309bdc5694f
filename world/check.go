package world

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/git-binky/git-binky/gitx"
)

// The patterns used only by `check` compile on first use: every `env` on a
// shell prompt parses the config, and start-up time is its whole cost.
var (
	// scheme://user:password@host — a password written into a URL.
	urlPasswordRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:([^@\s/]+)@`)
	})
)

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// validServiceName: letters, digits, '_' and '-', starting with a letter or digit.
func validServiceName(s string) bool {
	if s == "" || !isAlnum(s[0]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// validLabel: one DNS label, lowercase, 1-63 bytes, no leading/trailing '-'.
func validLabel(s string) bool { return len(s) <= 63 && labelChars(s) }

// labelChars reports whether s is made as a DNS label is (lowercase
// letters, digits, '-', not starting or ending with '-'), whatever its
// length.
func labelChars(s string) bool {
	if s == "" || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// validEnvName: a POSIX environment variable name.
func validEnvName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != '_' {
			return false
		}
	}
	return true
}

// validate finds the structural errors that make a config unusable.
// localDomain reports whether d is a domain world URLs may end in: DNS
// labels ending in "localhost" (always this machine) or "test" (reserved,
// never on the internet). A branch's binky.toml chooses it, and any other
// would let a branch nobody approved point API_URL-like variables that
// 'git binky env' exports at a host of its own (a review's attack:
// ANTHROPIC_BASE_URL at evil.example).
func localDomain(d string) bool {
	labels := strings.Split(d, ".")
	for _, l := range labels {
		if !validLabel(l) {
			return false
		}
	}
	last := labels[len(labels)-1]
	return last == "localhost" || last == "test"
}

// MaxPortsPerWorld bounds the ports one world's config may ask for. The
// range is the machine's (1,000 ports by default): without a bound, a
// branch whose binky.toml asked for a thousand took them all the moment
// its worktree was made or `env` ran in it, approved or not, and no other
// world could come up.
const MaxPortsPerWorld = 128

// maxRetries bounds health.retries: a service must be able to be found
// unhealthy within a day of probes.
const maxRetries = 10000

func (c *Config) validate() []Diagnostic {
	var diags []Diagnostic
	errAt := func(key []string, format string, args ...any) {
		diags = append(diags, c.at(SeverityError, key, format, args...))
	}
	switch c.Project.Auto {
	case "up", "provision", "off":
	default:
		errAt([]string{"project", "auto"}, "auto = %q: must be \"up\", \"provision\" or \"off\"", c.Project.Auto)
	}
	if !localDomain(c.Project.Domain) {
		errAt([]string{"project", "domain"}, "domain = %q: a world's URLs go into its environment (<SERVICE>_URL, which SDKs read as their API's base URL) and must name this machine: use localhost (the default), a name ending in .localhost, or one ending in .test (never resolved on the internet)", c.Project.Domain)
	}
	if n := c.Project.Name; len(n) > 63 && labelChars(n) {
		errAt([]string{"project", "name"}, "name = %q is %d characters: a project name is one label of every URL, at most 63 (like %q)", n, len(n), DNSLabel(n))
	} else if c.Project.Name != "" && !validLabel(c.Project.Name) {
		errAt([]string{"project", "name"}, "name = %q: a project name is part of every URL, so it must be lowercase letters, digits and '-' (like %q)", c.Project.Name, DNSLabel(c.Project.Name))
	}
	if len(c.Services) == 0 {
		diags = append(diags, Diagnostic{File: c.Path, Line: 1, Column: 1, Severity: SeverityError,
			Message: "no services: add a [services.NAME] table with a cmd (or an adapter)"})
	}
	urls := map[string]string{}
	names := c.ServiceNames()
	ports := 0
	for _, name := range names {
		s := c.Services[name]
		key := []string{"services", name}
		if ports += len(s.PortKeys()); ports > MaxPortsPerWorld && ports-len(s.PortKeys()) <= MaxPortsPerWorld {
			errAt(key, "the services up to %q ask for %d ports: a world holds at most %d (ports come from one range every world on this machine shares)", name, ports, MaxPortsPerWorld)
		}
		if !validServiceName(name) {
			errAt(key, "service name %q: use letters, digits, '_' and '-' (it becomes %s_PORT and part of URLs)", name, EnvStem(name))
		}
		switch {
		case s.Adapter == "" && s.Cmd == "":
			errAt(key, "service %q has neither cmd nor adapter: give it a cmd to run, or an adapter such as \"postgres\"", name)
		case s.Adapter != "" && s.Cmd != "":
			errAt(append(key, "cmd"), "service %q has both cmd and adapter %q: an adapter service is a slice of a shared server, not a process; move the cmd to its own service", name, s.Adapter)
		}
		if s.Adapter != "" && (s.URL != "" || len(s.Ports) > 0) {
			errAt(append(key, "url"), "service %q is an adapter slice and gets its address from the adapter; drop url/ports", name)
		}
		if s.URL != "" {
			if !validLabel(s.URL) {
				if len(s.URL) > 63 && labelChars(s.URL) {
					errAt(append(key, "url"), "url = %q is %d characters: it is one label of <url>.<worktree>.<project>.<domain>, at most 63 (like %q)", s.URL, len(s.URL), DNSLabel(s.URL))
				} else {
					errAt(append(key, "url"), "url = %q: must be one DNS label (lowercase letters, digits, '-'), like %q; it becomes <url>.<worktree>.<project>.<domain>", s.URL, DNSLabel(s.URL))
				}
			} else if other, dup := urls[s.URL]; dup {
				errAt(append(key, "url"), "url = %q is already used by service %q: URL names must be unique", s.URL, other)
			} else {
				urls[s.URL] = name
			}
		}
		switch s.CloneMigrate {
		case "", CloneMigrateAlways, CloneMigrateChanged:
		default:
			errAt(append(key, "clone_migrate"), "clone_migrate = %q: use %q (the default: migrate runs on every clone) or %q (only where the worktree may differ from the template's)", s.CloneMigrate, CloneMigrateAlways, CloneMigrateChanged)
		}
		if len(s.GoldenKey) > 0 && s.Adapter == "" {
			errAt(append(key, "golden_key"), "golden_key is for an adapter slice with clone_from = \"golden\": service %q runs a process", name)
		}
		for _, g := range s.GoldenKey {
			if msg := globProblem(g); msg != "" {
				errAt(append(key, "golden_key"), "golden_key: %s", msg)
			}
		}
		if s.PortEnv != nil && !s.HasPort() {
			errAt(append(key, "port_env"), "port_env: service %q asks for no port, so it gets no PORT to leave out", name)
		}
		seen := map[string]bool{}
		for _, p := range s.Ports {
			if !validServiceName(p) || seen[p] {
				errAt(append(key, "ports"), "ports: %q must be a unique name of letters, digits, '_' or '-'", p)
			}
			seen[p] = true
		}
		switch s.Restart {
		case "on-failure", "always", "no":
		default:
			errAt(append(key, "restart"), "restart = %q: must be \"on-failure\", \"always\" or \"no\"", s.Restart)
		}
		// Every key a oneshot cannot have is named at once, not one per
		// fix (an adapter slice is not a process at all: that alone).
		if s.Oneshot && s.Adapter != "" {
			errAt(append(key, "oneshot"), "oneshot: service %q is an adapter slice, not a process; a slice's own migrate = \"...\" runs once when it is made", name)
		} else if s.Oneshot {
			if s.Restart != "no" {
				errAt(append(key, "restart"), "restart = %q: a oneshot runs once and is never restarted; drop restart", s.Restart)
			}
			if s.URL != "" {
				errAt(append(key, "url"), "url = %q: a oneshot runs to completion, so nothing could reach it by URL; drop url (or oneshot)", s.URL)
			}
			if s.Health != nil {
				errAt(append(key, "health"), "health: a oneshot is ready when it exits 0, not by a probe; drop health (or oneshot)")
			}
		}
		for _, d := range s.DependsOn {
			if _, ok := c.Services[d]; !ok {
				msg := fmt.Sprintf("depends_on names %q, which is not a service", d)
				if n := Nearest(d, names); n != "" {
					msg += fmt.Sprintf(": did you mean %q?", n)
				}
				errAt(append(key, "depends_on"), "%s", msg)
			}
		}
		for k := range s.Env {
			if !validEnvName(k) {
				errAt(append(key, "env", k), "env key %q is not a valid variable name", k)
			}
		}
		if h := s.Health; h != nil {
			probes := 0
			for _, set := range []bool{h.HTTP != "", h.TCP, h.Cmd != ""} {
				if set {
					probes++
				}
			}
			if probes > 1 {
				errAt(append(key, "health"), "health: choose one of http, tcp or cmd")
			}
			if (h.HTTP != "" || h.TCP) && !s.HasPort() {
				errAt(append(key, "health"), "health checks a port, but service %q asks for none: add url = \"...\" or ports = [...]", name)
			}
			if h.HTTP != "" && !strings.HasPrefix(h.HTTP, "/") {
				errAt(append(key, "health", "http"), "health.http = %q: give a path starting with '/', like \"/healthz\"", h.HTTP)
			}
			// A negative count was taken for the default without a word.
			if h.Retries < 0 || h.Retries > maxRetries {
				errAt(append(key, "health", "retries"), "health.retries = %d: give the failed probes in a row that mark the service unhealthy, 1 to %d (leave it out for 3)", h.Retries, maxRetries)
			}
		}
		// A NUL cannot reach a process (exec refuses it): say so here, not
		// at up.
		for _, c := range []struct {
			key  []string
			text string
		}{{[]string{"cmd"}, s.Cmd}, {[]string{"migrate"}, s.Migrate}, {[]string{"seed"}, s.Seed}, {[]string{"cwd"}, s.Cwd}} {
			if strings.ContainsRune(c.text, 0) {
				errAt(append(key, c.key...), "%s holds a NUL character (\\u0000), which no command or path can carry: remove it", c.key[0])
			}
		}
		for k, v := range s.Env {
			if strings.ContainsRune(v, 0) {
				errAt(append(key, "env", k), "env %s holds a NUL character (\\u0000), which no environment variable can carry: remove it", k)
			}
		}
		if h := s.Health; h != nil && strings.ContainsRune(h.Cmd, 0) {
			errAt(append(key, "health", "cmd"), "health.cmd holds a NUL character (\\u0000), which no command can carry: remove it")
		}
	}
	for i, v := range c.Agents.Verify {
		if strings.ContainsRune(v, 0) {
			errAt([]string{"agents", "verify"}, "verify command %d holds a NUL character (\\u0000), which no command can carry: remove it", i+1)
		}
	}
	for _, g := range sortedKeys(c.Groups) {
		for _, s := range c.Groups[g] {
			if _, ok := c.Services[s]; !ok {
				errAt([]string{"groups", g}, "group %q names %q, which is not a service", g, s)
			}
		}
	}
	if cycle := c.findCycle(); cycle != nil {
		errAt([]string{"services", cycle[0], "depends_on"}, "dependency cycle: %s", strings.Join(cycle, " -> "))
	}
	return append(diags, c.envCollisions(func(string) []string { return everySliceHas })...)
}

// Adapter is what Check needs to know of an adapter name, from the adapter
// table (world cannot import adapters: dependencies point down).
type Adapter struct {
	// Known: binky can drive it (built in, or an external adapter on PATH).
	Known bool
	// Managed: binky can run its shared server itself when admin_url is
	// absent.
	Managed bool
	// Fields are the tokens a slice of it answers (${db.url}, ...); nil
	// when any is possible (an external adapter says at run time).
	Fields []string
	// Caveat is a limit of isolation that depends on the server, to warn of.
	Caveat string
	// AdminURL is the form of its admin_url, for the error that asks for one.
	AdminURL string
}

// AdapterInfo describes an adapter name; the adapters package provides it.
type AdapterInfo func(name string) Adapter

// Check returns every error and warning about a parsed config: the structural
// errors ParseConfig found, adapter problems, and footguns that still load.
// With info nil, adapter names are not checked.
func Check(c *Config, info AdapterInfo) []Diagnostic { return check(c, info, true) }

// CheckPortable is Check without what depends on this machine's shell (an
// ${env.X} that is not set here): what `init` holds the file it writes to,
// since the user sets those variables afterwards.
func CheckPortable(c *Config, info AdapterInfo) []Diagnostic { return check(c, info, false) }

func check(c *Config, info AdapterInfo, shell bool) []Diagnostic {
	var diags []Diagnostic
	warn := func(key []string, format string, args ...any) {
		diags = append(diags, c.at(SeverityWarning, key, format, args...))
	}
	for _, name := range c.ServiceNames() {
		s := c.Services[name]
		key := []string{"services", name}
		if s.Adapter != "" && info != nil {
			a := info(s.Adapter)
			switch {
			case !a.Known:
				diags = append(diags, c.at(SeverityError, append(key, "adapter"),
					"adapter %q is not built in and no binky-adapter-%s is on PATH: install it, or use one of binky's (git binky check --help lists them)", s.Adapter, s.Adapter))
			case !a.Managed && s.AdminURL == "":
				example := ""
				if a.AdminURL != "" {
					example = " (its form: " + a.AdminURL + ")"
				}
				diags = append(diags, c.at(SeverityError, append(key, "admin_url"),
					"adapter %q needs admin_url: binky cannot run a %s server itself here: set admin_url = \"${env.NAME}\" and export NAME%s", s.Adapter, s.Adapter, example))
			}
			if a.Caveat != "" {
				warn(append(key, "adapter"), "%s: %s", s.Adapter, a.Caveat)
			}
			// Keys in the options are what a server that cannot make a
			// user per world (a plain S3 endpoint) hands every world.
			if _, shared := s.Options["access_key"]; shared {
				warn(append(key, "options", "access_key"), "options access_key/secret_key are keys every world of %q shares: binky gives them to worlds only where the server cannot make a user per world (S3 without MinIO's admin API), and isolation between worlds is then by convention only", name)
			}
		}
		for _, f := range s.fields() {
			for _, ref := range Tokens(f.value) {
				if msg := c.tokenProblem(s, ref, info); msg != "" {
					warn(append(key, f.key...), "%s", msg)
				}
			}
			if m := urlPasswordRE().FindStringSubmatch(f.value); m != nil && !strings.Contains(m[1], "${") {
				warn(append(key, f.key...), "a password is written inline in %s: use ${env.NAME} (or env_file) so it is not committed", strings.Join(f.key, "."))
			}
		}
		if s.Adapter != "" {
			for _, d := range s.DependsOn {
				if dep := c.Services[d]; dep != nil && dep.Adapter == "" {
					warn(append(key, "depends_on"), "a slice does not wait for process %q: every slice is made, migrated and seeded before any process starts, so what %s's migrate or seed needs from it (an install, a build) belongs in the migrate itself (as migrate = \"npm ci && node migrate.js\")", d, name)
				}
			}
		}
		if len(s.GoldenKey) > 0 && s.CloneFrom != "golden" {
			warn(append(key, "golden_key"), "golden_key is only read with clone_from = \"golden\": add it, or drop golden_key")
		}
		if s.CloneMigrate != "" && (s.CloneFrom != "golden" || s.Migrate == "") {
			warn(append(key, "clone_migrate"), "clone_migrate is only read with clone_from = \"golden\" and a migrate: add them, or drop clone_migrate")
		}
		if msg := s.rerunProblem(); msg != "" {
			warn(append(key, "migrate"), "%s", msg)
		}
		for _, p := range s.listenProblems() {
			warn(append(key, p.key...), "%s", p.value)
		}
		for _, name := range s.EnvRefs() {
			if !shell {
				break
			}
			if _, set := c.shellEnv(s)[name]; !set && c.setsItself(name) {
				warn(key, "${env.%s} reads the environment 'git binky up' is run in, but binky sets %s in the service's own: write ${self.port} or ${svc.field} (as ${db.url}), or $%s in a command", name, name, name)
			} else if !set {
				warn(key, "${env.%s} is not set in this shell (nor in an env_file): 'git binky up' refuses to start service %q until it is; export it, or write a default: ${env.%s:-value}", name, s.Name, name)
			}
		}
		for _, k := range sortedKeys(s.Env) {
			v := s.Env[k]
			if SecretKey(k) && v != "" && !strings.Contains(v, "${") {
				warn(append(key, "env", k), "%s looks like a credential written inline: use %s = \"${env.%s}\" (or env_file) so it is not committed", k, k, k)
			}
		}
	}
	if info != nil {
		// Each adapter's own fields: a collision the structural check,
		// which knows only the fields every slice has, could not see.
		diags = append(diags, c.envCollisions(func(adapter string) []string {
			if f := info(adapter).Fields; f != nil {
				return f
			}
			return everySliceHas
		})...)
	}
	for i, v := range c.Agents.Verify {
		for _, ref := range Tokens(v) {
			if msg := c.tokenProblem(nil, ref, info); msg != "" {
				warn([]string{"agents", "verify"}, "verify[%d]: %s", i, msg)
			}
		}
	}
	sort.SliceStable(diags, func(i, j int) bool {
		if diags[i].Line != diags[j].Line {
			return diags[i].Line < diags[j].Line
		}
		return diags[i].Column < diags[j].Column
	})
	return diags
}

type field struct {
	key   []string
	value string
}

// fields lists the service's strings that may hold ${...} tokens.
func (s *Service) fields() []field {
	fs := []field{{[]string{"cmd"}, s.Cmd}, {[]string{"cwd"}, s.Cwd}, {[]string{"env_file"}, s.EnvFile},
		{[]string{"admin_url"}, s.AdminURL}, {[]string{"migrate"}, s.Migrate}, {[]string{"seed"}, s.Seed}}
	if s.Health != nil {
		fs = append(fs, field{[]string{"health", "cmd"}, s.Health.Cmd}, field{[]string{"health", "http"}, s.Health.HTTP})
	}
	for _, k := range sortedKeys(s.Env) {
		fs = append(fs, field{[]string{"env", k}, s.Env[k]})
	}
	return fs
}

// adapterFields are the tokens every adapter slice answers, for a check
// that has no adapter table (info nil).
var adapterFields = []string{"url", "host", "port", "name", "user", "password", "prefix"}

// tokenProblem says what is wrong with ${ref} used in service s (nil for
// tokens outside any service), or "" when the token will resolve.
func (c *Config) tokenProblem(s *Service, ref string, info AdapterInfo) string {
	ns, rest, _ := strings.Cut(ref, ".")
	switch ns {
	case "env":
		if rest == "" {
			return fmt.Sprintf("${%s}: name the variable, like ${env.HOME}", ref)
		}
		return ""
	case "worktree":
		if rest == "name" || rest == "path" || rest == "branch" {
			return ""
		}
		return fmt.Sprintf("unknown token ${%s} (worktree has name, path and branch); it will be left as written", ref)
	case "project":
		if rest == "name" {
			return ""
		}
		return fmt.Sprintf("unknown token ${%s} (project has name); it will be left as written", ref)
	case "self":
		if s == nil {
			return fmt.Sprintf("${%s} means nothing outside a service; it will be left as written", ref)
		}
		if !s.HasPort() && s.Adapter == "" && (rest == "port" || rest == "url" || rest == "direct_url" || strings.HasPrefix(rest, "ports.")) {
			if s.Oneshot {
				return fmt.Sprintf("${%s} but service %q asks for no port, so it stays literal and the process will likely fail on it: add ports = [...] (a oneshot takes no url)", ref, s.Name)
			}
			return fmt.Sprintf("${%s} but service %q asks for no port, so it stays literal and the process will likely fail on it: add url = \"%s\" or ports = [...]", ref, s.Name, DNSLabel(s.Name))
		}
		return c.fieldProblem(s, ref, rest, info)
	}
	target, ok := c.Services[ns]
	if !ok {
		return fmt.Sprintf("unknown token ${%s}: %q is not a service (nor self, env, worktree or project); it will be left as written", ref, ns)
	}
	return c.fieldProblem(target, ref, rest, info)
}

func (c *Config) fieldProblem(t *Service, ref, field string, info AdapterInfo) string {
	if t.Adapter != "" {
		fields := adapterFields
		if info != nil {
			if a := info(t.Adapter); a.Known {
				if a.Fields == nil {
					return "" // an external adapter: only it knows
				}
				fields = a.Fields
			}
		}
		if slices.Contains(fields, field) {
			return ""
		}
		return fmt.Sprintf("unknown token ${%s}: adapter service %q (%s) offers %s", ref, t.Name, t.Adapter, strings.Join(fields, ", "))
	}
	switch {
	case field == "host":
		return ""
	case field == "port" || field == "url" || field == "direct_url":
		if !t.HasPort() && t.Oneshot {
			return fmt.Sprintf("${%s} but service %q asks for no port: add ports = [...] to it (a oneshot takes no url)", ref, t.Name)
		}
		if !t.HasPort() {
			return fmt.Sprintf("${%s} but service %q asks for no port: add url = \"...\" or ports = [...] to it", ref, t.Name)
		}
		return ""
	case strings.HasPrefix(field, "ports."):
		p := strings.TrimPrefix(field, "ports.")
		for _, have := range t.Ports {
			if have == p {
				return ""
			}
		}
		return fmt.Sprintf("unknown token ${%s}: service %q declares no port named %q", ref, t.Name, p)
	}
	return fmt.Sprintf("unknown token ${%s}: a service offers port, url, direct_url, host and ports.NAME", ref)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// CheckPath validates the binky.toml at path: a file, a folder holding one,
// or (when path is "") the root of the worktree dir is in. It returns the
// file it read and every diagnostic; the error is for a file it could not
// read at all.
func CheckPath(dir, path string, info AdapterInfo) (string, []Diagnostic, error) {
	file, err := FindConfig(dir, path)
	if err != nil {
		return file, nil, err
	}
	src, err := ReadConfigFile(file)
	if err != nil {
		if os.IsNotExist(err) {
			return file, nil, fmt.Errorf("%s: %w", file, ErrNoConfig)
		}
		return file, nil, fmt.Errorf("read config: %w", err)
	}
	cfg, diags := ParseConfig(file, src)
	if cfg == nil || hasErrors(diags) {
		return file, diags, nil
	}
	return file, Check(cfg, info), nil
}

// FindConfig resolves which binky.toml a command means: path if given (a
// file or a folder), else the one at the root of the worktree around dir,
// else the one in dir.
func FindConfig(dir, path string) (string, error) {
	if path != "" {
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		if fi, err := os.Stat(path); err == nil && fi.IsDir() {
			path = filepath.Join(path, ConfigFile)
		}
		return path, nil
	}
	if _, wt, err := gitx.Discover(dir); err == nil {
		return filepath.Join(wt.Path, ConfigFile), nil
	}
	return filepath.Join(dir, ConfigFile), nil
}

// everySliceHas are the fields every adapter's slice has (a test in
// adapters keeps it so): what binky.toml is held to without knowing the
// adapters, at every up. `check` holds it to each adapter's own.
var everySliceHas = []string{"url", "host", "port"}

// EverySliceHas is everySliceHas, for that test.
func EverySliceHas() []string { return append([]string(nil), everySliceHas...) }

// envCollisions finds two services that set one variable: names become
// variables with '-' and '_' read alike and a port or field name joined to
// the stem, so "api-admin" and "api_admin" (or "api" with port "admin"
// and "api-admin") would both write API_ADMIN_PORT, the last one silently
// winning in every process's environment.
// fields are an adapter's slice fields.
func (c *Config) envCollisions(fields func(adapter string) []string) []Diagnostic {
	set := map[string]string{}
	var diags []Diagnostic
	reported := map[[2]string]bool{} // one error per pair, not per variable
	for _, name := range c.ServiceNames() {
		s := c.Services[name]
		stem := EnvStem(name)
		var vars []string
		switch {
		case s.Adapter != "":
			for _, f := range fields(s.Adapter) {
				vars = append(vars, stem+"_"+EnvName(f))
			}
		case s.Adapter == "" && s.HasPort():
			vars = append(vars, stem+"_HOST", stem+"_PORT", stem+"_URL", stem+"_DIRECT_URL")
			for _, p := range s.Ports {
				vars = append(vars, stem+"_"+EnvName(p)+"_PORT")
			}
		}
		for _, v := range vars {
			other, taken := set[v]
			pair := [2]string{other, name}
			switch {
			case !taken:
				set[v] = name
			case other == name || reported[pair]:
			case other != name:
				diags = append(diags, c.at(SeverityError, []string{"services", name},
					"services %q and %q would both set %s (a name becomes a variable with '-' and '_' alike, and a port or field name joins it): rename one", other, name, v))
			}
			if taken && other != name {
				reported[pair] = true
			}
		}
	}
	return diags
}

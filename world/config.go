package world

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/git-binky/git-binky/smallfile"
)

// ConfigFile is the name of the committed config at a worktree's root.
const ConfigFile = "binky.toml"

// ErrNoConfig is returned when a worktree has no binky.toml.
var ErrNoConfig = errors.New("no " + ConfigFile)

// Config is a parsed binky.toml.
type Config struct {
	Project  Project             `toml:"project"`
	Services map[string]*Service `toml:"services"`
	Groups   map[string][]string `toml:"groups"`
	Agents   Agents              `toml:"agents"`

	// Path is the file the config was read from; Source its bytes (for
	// positions in diagnostics and for the trust hash).
	Path   string `toml:"-"`
	Source []byte `toml:"-"`
	pos    *lazyLocator
}

// Project is the [project] table.
type Project struct {
	Name string `toml:"name"`
	// Auto says what `git worktree add` does: "up", "provision" or "off".
	Auto string `toml:"auto"`
	// Domain is the last label of world URLs (default "localhost").
	Domain string `toml:"domain"`
	// WorktreeDir is where `git binky up <name>` creates worktrees, relative
	// to the main worktree (default ".." , i.e. beside it).
	WorktreeDir string `toml:"worktree_dir"`
	// EnvFile is loaded into every service's environment.
	EnvFile string `toml:"env_file"`
	// ReloadOnCheckout restarts a running world when its worktree checks
	// out another branch.
	ReloadOnCheckout bool `toml:"reload_on_checkout"`
}

// Service is one [services.NAME] table: a supervised process, or an adapter
// slice when Adapter is set.
type Service struct {
	Cmd       string            `toml:"cmd"`
	URL       string            `toml:"url"`
	Ports     []string          `toml:"ports"`
	DependsOn []string          `toml:"depends_on"`
	Env       map[string]string `toml:"env"`
	EnvFile   string            `toml:"env_file"`
	Cwd       string            `toml:"cwd"`
	Health    *Health           `toml:"health"`
	Restart   string            `toml:"restart"`
	// Oneshot runs the process to completion at each start of its world
	// (a migration): what depends on it starts once it exits 0, and any
	// other exit fails the up. Never restarted; no health check.
	Oneshot bool `toml:"oneshot"`
	// StopTimeout is the grace between SIGTERM and SIGKILL.
	StopTimeout Duration `toml:"stop_timeout"`

	Adapter   string         `toml:"adapter"`
	AdminURL  string         `toml:"admin_url"`
	Migrate   string         `toml:"migrate"`
	Seed      string         `toml:"seed"`
	CloneFrom string         `toml:"clone_from"`
	Options   map[string]any `toml:"options"` // passed to the adapter as its config

	// GoldenKey are files (globs relative to the worktree, "**" for any
	// depth) hashed into the golden template's key with migrate and seed,
	// so editing a migration builds a new template.
	GoldenKey []string `toml:"golden_key"`
	// CloneMigrate says when migrate runs on a clone of the golden
	// template: "always" (the default, ""), or "changed": only where the
	// worktree may hold migrations the template lacks (see CloneMigrateChanged).
	CloneMigrate string `toml:"clone_migrate"`
	// PortEnv false leaves PORT out of the service's environment, for an
	// app that would listen on *:PORT rather than on its own address.
	PortEnv *bool `toml:"port_env"`

	Name string `toml:"-"`
}

// The values of clone_migrate. With CloneMigrateChanged a clone skips
// migrate when its worktree is clean at the commit of the clean worktree
// that built the template: for a migrate whose whole work the copy
// carries (tables, rows), and whose inputs are the worktree's tracked
// files.
const (
	CloneMigrateAlways  = "always"
	CloneMigrateChanged = "changed"
)

// Health is a service's readiness probe.
type Health struct {
	HTTP        string   `toml:"http"`
	TCP         bool     `toml:"tcp"`
	Cmd         string   `toml:"cmd"`
	Interval    Duration `toml:"interval"`
	Timeout     Duration `toml:"timeout"`
	StartPeriod Duration `toml:"start_period"`
	Retries     int      `toml:"retries"`
}

// Agents is the [agents] table.
type Agents struct {
	Verify []string `toml:"verify"`
}

// Duration is a time.Duration written as "2s" or "1m30s" in TOML.
type Duration struct{ time.Duration }

// durationShape is text time.ParseDuration would read but for its size.
var durationShape = regexp.MustCompile(`^\+?([0-9]+(\.[0-9]*)?(ns|us|µs|ms|s|m|h))+$`)

// UnmarshalText parses a Go duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		if durationShape.Match(b) {
			return fmt.Errorf("%q is longer than a duration can be (at most about 292 years, 2562047h)", b)
		}
		return fmt.Errorf("%q is not a duration (write it like \"500ms\", \"2s\" or \"1m\")", b)
	}
	if v < 0 {
		return fmt.Errorf("%q: a duration cannot be negative", b)
	}
	d.Duration = v
	return nil
}

// MarshalText writes the duration back in Go syntax.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// HasPort reports whether the service asks for a port: declaring url or
// ports is what asks (the seed's "one rule to internalise").
func (s *Service) HasPort() bool { return s.Adapter == "" && (s.URL != "" || len(s.Ports) > 0) }

// PortKeys are the keys the service's ports are leased under: the service
// name for its main port, "service.name" for each named extra port.
func (s *Service) PortKeys() []string {
	if !s.HasPort() {
		return nil
	}
	keys := []string{s.Name}
	for _, p := range s.Ports {
		keys = append(keys, s.Name+"."+p)
	}
	return keys
}

// ServiceNames returns the service names in sorted order.
func (c *Config) ServiceNames() []string {
	names := make([]string, 0, len(c.Services))
	for n := range c.Services {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Diagnostic is one finding about a config, with where it is.
type Diagnostic struct {
	File     string `json:"file"`
	Line     int    `json:"line"`
	Column   int    `json:"column"`
	Severity string `json:"severity"` // "error" or "warning"
	Message  string `json:"message"`
}

func (d Diagnostic) String() string {
	loc := d.File
	if d.Line > 0 {
		loc = fmt.Sprintf("%s:%d:%d", d.File, d.Line, d.Column)
	}
	return fmt.Sprintf("%s: %s: %s", loc, d.Severity, d.Message)
}

// ConfigError is a config that cannot be used; it carries every error found.
type ConfigError struct {
	Diagnostics []Diagnostic
}

func (e *ConfigError) Error() string {
	var errs []string
	for _, d := range e.Diagnostics {
		if d.Severity == SeverityError {
			errs = append(errs, d.String())
		}
	}
	if len(errs) == 1 {
		return errs[0]
	}
	return fmt.Sprintf("%s (and %d more problems; run 'git binky check' to see all)", errs[0], len(errs)-1)
}

// Severities of a Diagnostic.
const (
	SeverityError   = "error"
	SeverityWarning = "warning"
)

// MaxConfigSize is the largest binky.toml binky reads: far above any real
// one (a few KiB), and far below what would hurt the daemon, a hook or a
// prompt's env. Decoding costs ~1 s per MiB here even for plain keys, and
// up to ~3 s and 660 MB allocated per MiB for the worst shapes
// shapeProblem lets through: 256 KiB keeps the worst under a second.
const MaxConfigSize = 256 << 10

// ReadConfigFile reads the binky.toml at path, refusing what a branch
// could commit to stall or exhaust whoever reads it: a symbolic link to a
// device (/dev/zero), a named pipe, a folder, or a file past MaxConfigSize.
// A link to a regular file is read.
func ReadConfigFile(path string) ([]byte, error) {
	b, err := readRegular(path, MaxConfigSize)
	if errors.Is(err, errNotRegular) {
		return nil, fmt.Errorf("%w: binky reads only a plain binky.toml; replace it with one", err)
	}
	if errors.Is(err, errTooLarge) {
		return nil, fmt.Errorf("%w: a binky.toml is a few KiB", err)
	}
	return b, err
}

var (
	errNotRegular = smallfile.ErrNotRegular
	errTooLarge   = smallfile.ErrTooLarge
)

// readRegular reads the regular file at path (links followed), of at most
// max bytes. Anything else (a device, a pipe, a folder) is refused, so that
// a read can neither block nor run away.
func readRegular(path string, max int64) ([]byte, error) {
	return smallfile.Read(path, max)
}

// LoadConfig reads and validates the binky.toml in dir (or the file at path
// if it names one). Structural errors (bad TOML, unknown keys, wrong types,
// broken references) fail the load with a *ConfigError; warnings do not.
func LoadConfig(path string) (*Config, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, ConfigFile)
	}
	src, err := ReadConfigFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w (create one, or run 'git binky init' to write one from docker-compose.yml)", path, ErrNoConfig)
		}
		return nil, fmt.Errorf("read config: %w", err)
	}
	cfg, diags := ParseConfig(path, src)
	if hasErrors(diags) {
		return nil, &ConfigError{Diagnostics: diags}
	}
	return cfg, nil
}

// HasErrors reports whether diags hold an error (not only warnings): a
// config that cannot be used.
func HasErrors(diags []Diagnostic) bool { return hasErrors(diags) }

func hasErrors(diags []Diagnostic) bool {
	for _, d := range diags {
		if d.Severity == SeverityError {
			return true
		}
	}
	return false
}

// ParseConfig decodes src strictly and validates it. It never panics; the
// returned config is nil when the TOML itself cannot be decoded.
func ParseConfig(path string, src []byte) (*Config, []Diagnostic) {
	if line, col, msg, ok := shapeProblem(src); !ok {
		return nil, []Diagnostic{{File: path, Line: line, Column: col, Severity: SeverityError, Message: msg}}
	}
	cfg := &Config{Path: path, Source: src, pos: &lazyLocator{src: src}}
	md, err := toml.NewDecoder(bytes.NewReader(src)).Decode(cfg)
	if err != nil {
		return nil, []Diagnostic{decodeDiagnostic(path, src, err)}
	}
	var diags []Diagnostic
	reported := map[string]bool{}
	for _, k := range md.Undecoded() {
		// Report only the outermost unknown key: a misspelt table makes
		// every key under it undecoded too.
		k = outermostUnknown(k)
		if id := k.String(); !reported[id] {
			reported[id] = true
			diags = append(diags, cfg.unknownKey(k))
		}
	}
	if hasErrors(diags) {
		return cfg, diags
	}
	for name, s := range cfg.Services {
		if s == nil {
			cfg.Services[name] = &Service{}
			s = cfg.Services[name]
		}
		s.Name = name
	}
	cfg.applyDefaults()
	diags = append(diags, cfg.validate()...)
	return cfg, diags
}

// newlineLine is the line of an error the TOML parser placed at line n,
// column col, past that line's end: its column is one past the previous
// line's end, the parser having counted the newline it choked on ("got
// '\n' instead") before it said where.
func newlineLine(src []byte, n, col int) int {
	lines := strings.Split(string(src), "\n")
	if n < 2 || n > len(lines) {
		return n
	}
	cur, prev := strings.TrimSuffix(lines[n-1], "\r"), strings.TrimSuffix(lines[n-2], "\r")
	if col-1 <= len(cur) || col-1 != len(prev) && col-1 != len(prev)+1 {
		return n
	}
	return n - 1
}

// keyOnLine reports whether line n of src (from 1) names the last part
// of the dotted key.
func keyOnLine(src []byte, n int, key string) bool {
	if key == "" || n < 1 {
		return false
	}
	lines := strings.SplitN(string(src), "\n", n+1)
	if len(lines) < n {
		return false
	}
	return strings.Contains(lines[n-1], key[strings.LastIndex(key, ".")+1:])
}

// decodeDiagnostic turns a BurntSushi error into a positioned diagnostic.
// Syntax errors are toml.ParseError with a position; type errors are plain
// errors of the form `toml: line N (last key "a.b"): message`.
func decodeDiagnostic(path string, src []byte, err error) Diagnostic {
	d := Diagnostic{File: path, Severity: SeverityError, Message: err.Error()}
	var pe toml.ParseError
	lastKey := ""
	if errors.As(err, &pe) {
		d.Line, d.Column = pe.Position.Line, pe.Position.Col
		d.Message, lastKey = pe.Message, pe.LastKey
		d.Line = newlineLine(src, d.Line, d.Column)
		if !keyOnLine(src, d.Line, lastKey) {
			// The key parsed last, on an earlier line: an unclosed
			// [services.bad was said to be "at key services.web".
			lastKey = ""
		}
	} else if rest, ok := strings.CutPrefix(d.Message, "toml: "); ok {
		d.Message = rest
		if rest, ok := strings.CutPrefix(rest, "line "); ok {
			n := 0
			for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
				d.Line = d.Line*10 + int(rest[n]-'0')
				n++
			}
			rest = strings.TrimSpace(rest[n:])
			if k, ok := strings.CutPrefix(rest, "(last key \""); ok {
				if end := strings.Index(k, "\"):"); end >= 0 {
					lastKey, rest = k[:end], strings.TrimSpace(k[end+3:])
				}
			}
			d.Message = strings.TrimPrefix(rest, ": ")
		}
	}
	d.Message = plainTypeError(d.Message)
	if lastKey != "" {
		d.Message = fmt.Sprintf("%s (at key %q)", d.Message, lastKey)
		if d.Column == 0 && d.Line > 0 {
			d.Column = newLocator(src).columnOn(d.Line, lastKey)
		}
	}
	d.Message = strings.TrimPrefix(d.Message, "toml: ")
	if d.Line == 0 {
		d.Line = 1
	}
	if d.Column == 0 {
		d.Column = 1
	}
	return d
}

// The decoder's type errors speak of Go types ("type mismatch for
// world.Health: expected table but found string"); plainTypeError says
// what was written and what binky.toml wants instead.
var (
	wantTable = regexp.MustCompile(`^type mismatch for [^:]+: expected table but found (\S+)$`)
	wantOther = regexp.MustCompile(`^incompatible types: TOML value has type (\S+); destination has type (.+)$`)
)

func plainTypeError(msg string) string {
	if m := wantTable.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("this is %s, but it must be a table: a [section], or { key = value, ... } inline", tomlKind(m[1]))
	}
	if m := wantOther.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("this is %s, but it must be %s", tomlKind(m[1]), tomlKind(m[2]))
	}
	return msg
}

// tomlKind names a Go type as the TOML kind of value it holds.
func tomlKind(goType string) string {
	switch {
	case goType == "string" || strings.Contains(goType, "string-like"):
		return "a string (in quotes)"
	case strings.HasPrefix(goType, "int") || strings.HasPrefix(goType, "uint") || strings.HasPrefix(goType, "float"):
		return "a number"
	case goType == "bool":
		return "true or false"
	case strings.HasPrefix(goType, "[]") || goType == "slice" || goType == "array":
		return "a list [ ... ]"
	case strings.HasPrefix(goType, "map[") || goType == "map" || goType == "struct":
		return "a table"
	case strings.Contains(goType, "Time") || strings.HasPrefix(goType, "toml.Local"):
		return "a date or time"
	}
	return goType
}

// outermostUnknown cuts k at its first element that is not a known key of
// the table it sits in.
func outermostUnknown(k toml.Key) toml.Key {
	for i := range k {
		_, known := knownKeysFor(k[:i+1])
		if known != nil && !contains(known, k[i]) {
			return k[:i+1]
		}
	}
	return k
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (c *Config) applyDefaults() {
	if c.Project.Auto == "" {
		c.Project.Auto = "up"
	}
	if c.Project.Domain == "" {
		c.Project.Domain = "localhost"
	}
	if c.Project.WorktreeDir == "" {
		c.Project.WorktreeDir = ".."
	}
	for _, s := range c.Services {
		if s.Restart == "" {
			s.Restart = "on-failure"
			if s.Oneshot {
				s.Restart = "no"
			}
		}
	}
}

// ProjectName is the project's name, or fallback (the repository's folder
// name) when binky.toml does not set one.
func (c *Config) ProjectName(fallback string) string {
	if c.Project.Name != "" {
		return c.Project.Name
	}
	return fallback
}

// at returns a diagnostic positioned at the key path in the source.
func (c *Config) at(sev string, key []string, format string, args ...any) Diagnostic {
	line, col := c.pos.find(key)
	return Diagnostic{File: c.Path, Line: line, Column: col, Severity: sev, Message: fmt.Sprintf(format, args...)}
}

// unknownKey explains an undecoded key, suggesting the nearest known one.
func (c *Config) unknownKey(k toml.Key) Diagnostic {
	table, known := knownKeysFor(k)
	name := k[len(k)-1]
	msg := fmt.Sprintf("unknown key %q", name)
	if table != "" {
		msg += " in [" + table + "]"
	}
	if s := Nearest(name, known); s != "" {
		msg += fmt.Sprintf(": did you mean %q?", s)
	} else if len(known) > 0 {
		msg += fmt.Sprintf(" (known keys: %s)", strings.Join(known, ", "))
	}
	return c.at(SeverityError, k, "%s", msg)
}

var (
	topKeys     = []string{"agents", "groups", "project", "services"}
	projectKeys = []string{"auto", "domain", "env_file", "name", "reload_on_checkout", "worktree_dir"}
	serviceKeys = []string{"adapter", "admin_url", "clone_from", "clone_migrate", "cmd", "cwd", "depends_on", "env", "env_file", "golden_key", "health", "migrate", "oneshot", "options", "port_env", "ports", "restart", "seed", "stop_timeout", "url"}
	healthKeys  = []string{"cmd", "http", "interval", "retries", "start_period", "tcp", "timeout"}
	agentsKeys  = []string{"verify"}
)

// knownKeysFor names the table an undecoded key sits in and the keys that
// table allows.
func knownKeysFor(k toml.Key) (string, []string) {
	switch {
	case len(k) == 1:
		return "", topKeys
	case k[0] == "project" && len(k) == 2:
		return "project", projectKeys
	case k[0] == "agents" && len(k) == 2:
		return "agents", agentsKeys
	case k[0] == "services" && len(k) == 3:
		return "services." + k[1], serviceKeys
	case k[0] == "services" && len(k) == 4 && k[2] == "health":
		return "services." + k[1] + ".health", healthKeys
	}
	return strings.Join(k[:len(k)-1], "."), nil
}

// Nearest returns the candidate closest to s by edit distance, if it is
// close enough to be a likely typo ("" otherwise).
func Nearest(s string, candidates []string) string {
	best, bestD := "", len(s)/2+2
	for _, c := range candidates {
		if d := editDistance(s, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

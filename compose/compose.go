// Package compose turns a docker-compose.yml (and the .env beside it) into a
// binky.toml a person can read: services become processes or adapter slices,
// published ports become URLs, depends_on, environment, env_file,
// healthchecks and profiles carry over, and every guess is marked with a
// comment. It never writes a credential inline: a secret becomes
// ${env.NAME}, and the result says which names to set.
package compose

import (
	"bufio"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/git-binky/git-binky/adapters"
)

// Files is where Convert looks, first found wins.
var Files = []string{"compose.yaml", "compose.yml", "docker-compose.yml", "docker-compose.yaml"}

// ErrNoCompose is returned when a folder has no compose file.
var ErrNoCompose = errors.New("no compose file")

// Result is a converted project.
type Result struct {
	Source string // the compose file read
	TOML   string
	// SetEnv are the variables the config reads that the user must set
	// (secrets kept out of the file).
	SetEnv []string
}

// Find returns the compose file in dir.
func Find(dir string) (string, error) {
	for _, f := range Files {
		p := filepath.Join(dir, f)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %w (looked for %s)", dir, ErrNoCompose, strings.Join(Files, ", "))
}

// Convert reads the compose file at path and the .env beside it.
func Convert(path string) (Result, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return Result{}, fmt.Errorf("read compose file: %w", err)
	}
	dotenv, err := readDotenv(filepath.Join(filepath.Dir(path), ".env"))
	if err != nil {
		return Result{}, err
	}
	name := filepath.Base(filepath.Dir(path))
	return ConvertBytes(path, src, dotenv, name)
}

// ConvertBytes converts compose source; project is the fallback name.
func ConvertBytes(path string, src []byte, dotenv map[string]string, project string) (Result, error) {
	var doc map[string]any
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return Result{}, yamlError(path, err)
	}
	c := &converter{path: path, dotenv: dotenv, setEnv: map[string]bool{}}
	raw, _ := doc["services"].(map[string]any)
	if len(raw) == 0 {
		return Result{}, fmt.Errorf("%s: no services (a compose file lists them under a services key)", path)
	}
	if n, ok := doc["name"].(string); ok && n != "" {
		project = n
	}
	c.project = label(project)
	for name, v := range raw {
		m, ok := v.(map[string]any)
		if !ok {
			return Result{}, fmt.Errorf("%s: service %q: expected a mapping", path, name)
		}
		c.services = append(c.services, c.read(name, m))
	}
	sort.Slice(c.services, func(i, j int) bool { return c.services[i].name < c.services[j].name })
	c.byName = map[string]*service{}
	for _, s := range c.services {
		c.byName[s.composeName] = s
	}
	return Result{Source: path, TOML: c.render(), SetEnv: sortedSet(c.setEnv)}, nil
}

// yamlError gives the YAML error with line and column.
func yamlError(path string, err error) error {
	var ye yaml.Error
	if errors.As(err, &ye) {
		if tok := ye.GetToken(); tok != nil && tok.Position != nil {
			return fmt.Errorf("%s:%d:%d: %s", path, tok.Position.Line, tok.Position.Column, ye.GetMessage())
		}
		return fmt.Errorf("%s: %s", path, ye.GetMessage())
	}
	return fmt.Errorf("%s: %w", path, err)
}

type service struct {
	name, composeName string
	adapter           string
	adminEnv          string // for adapters binky cannot run itself
	cmd, cwd          string
	guessedCmd        string // why cmd is a placeholder
	image, build      string
	port              string // the container port, when published or exposed
	dependsOn         []string
	rawEnv            [][2]string
	envFile           []string
	health            string
	healthNote        string
	profiles          []string
}

type converter struct {
	path     string
	project  string
	dotenv   map[string]string
	services []*service
	byName   map[string]*service
	setEnv   map[string]bool
}

func (c *converter) read(name string, m map[string]any) *service {
	s := &service{name: label(name), composeName: name}
	s.image = c.expand(str(m["image"]))
	var kind adapters.Kind
	if k, ok := adapters.ForImage(s.image); ok {
		kind, s.adapter = k, k.Name
	}
	switch b := m["build"].(type) {
	case string:
		s.build = c.expand(b)
	case map[string]any:
		s.build = c.expand(str(b["context"]))
		if s.build == "" {
			s.build = "."
		}
	}
	if s.adapter != "" && kind.Server == nil {
		s.adminEnv = strings.ToUpper(s.adapter) + "_ADMIN_URL"
		c.setEnv[s.adminEnv] = true
	}
	s.port = containerPort(m["ports"])
	if s.port == "" {
		s.port = containerPort(m["expose"])
	}
	s.dependsOn = keysOrList(m["depends_on"])
	s.profiles = list(m["profiles"])
	s.envFile = list(m["env_file"])
	if s.adapter == "" {
		// A list is exec form (quote each argument); a string is already a
		// shell command line.
		var parts []string
		for _, k := range []string{"entrypoint", "command"} {
			switch v := m[k].(type) {
			case string:
				parts = append(parts, v)
			case []any:
				parts = append(parts, shellJoin(list(v)))
			}
		}
		if len(parts) > 0 {
			s.cmd = c.subst(strings.Join(parts, " "))
		}
		switch {
		case s.cmd != "":
		case s.build != "":
			s.guessedCmd = fmt.Sprintf("compose builds %s from %s; binky runs processes, not images: write the command that runs it here", name, s.build)
		default:
			s.guessedCmd = fmt.Sprintf("compose runs the image %s; binky runs processes: write the command that runs it here (or drop the service)", s.image)
		}
		if s.build != "" && s.build != "." {
			s.cwd = strings.TrimPrefix(filepath.Clean(s.build), "./")
		}
	}
	s.readHealth(m["healthcheck"])
	// Read once every service is known: a value can name another service.
	s.rawEnv = env(m["environment"])
	return s
}

func (s *service) readHealth(v any) {
	h, ok := v.(map[string]any)
	if !ok {
		return
	}
	if b, _ := h["disable"].(bool); b {
		return
	}
	var test []string
	switch t := h["test"].(type) {
	case string:
		test = []string{"CMD-SHELL", t}
	case []any:
		for _, x := range t {
			test = append(test, fmt.Sprint(x))
		}
	}
	if len(test) == 0 || test[0] == "NONE" {
		return
	}
	cmdline := strings.Join(test[1:], " ")
	if test[0] == "CMD" {
		cmdline = shellJoin(test[1:])
	}
	var opts []string
	if u := localURL.FindString(cmdline); u != "" {
		if pu, err := url.Parse(u); err == nil {
			p := pu.EscapedPath()
			if p == "" {
				p = "/"
			}
			opts = append(opts, fmt.Sprintf("http = %q", p))
			s.healthNote = "from the compose healthcheck " + strconv.Quote(cmdline)
		}
	}
	if len(opts) == 0 {
		opts = append(opts, fmt.Sprintf("cmd = %q", cmdline))
		s.healthNote = "the compose healthcheck ran in the container; check it works on this machine"
	}
	for _, k := range []string{"interval", "timeout", "start_period", "retries"} {
		if v, ok := h[k]; ok {
			if k == "retries" {
				opts = append(opts, fmt.Sprintf("retries = %v", v))
			} else {
				opts = append(opts, fmt.Sprintf("%s = %q", k, fmt.Sprint(v)))
			}
		}
	}
	s.health = "{ " + strings.Join(opts, ", ") + " }"
}

var localURL = regexp.MustCompile(`https?://(localhost|127\.0\.0\.1|0\.0\.0\.0)(:\d+)?(/[^\s'"]*)?`)

// secretKey names variables that hold credentials.
var secretKey = regexp.MustCompile(`(?i)(PASSWORD|PASSWD|SECRET|TOKEN|API_?KEY|PRIVATE_?KEY|CREDENTIAL)`)

// envValue rewrites one environment value for binky: a URL or host naming
// another service becomes that service's token, and a credential becomes
// ${env.KEY}. It returns the value and a note for the comment.
func (c *converter) envValue(self *service, key, val string) (string, string) {
	val = c.subst(val)
	if m := urlParts.FindStringSubmatch(val); m != nil {
		userinfo, host, rest := m[2], m[3], m[5]
		if other, ok := c.byName[host]; ok {
			if other.adapter != "" {
				return "${" + other.name + ".url}", "was a URL to the " + host + " container; now this world's own " + other.adapter + " slice"
			}
			return "${" + other.name + ".direct_url}" + rest, ""
		}
		if strings.Contains(userinfo, ":") && !strings.Contains(userinfo, "${") {
			c.setEnv[key] = true
			return "${env." + key + "}", "held a password: set " + key + " in your environment"
		}
	}
	if other, ok := c.byName[val]; ok && other != self {
		return "${" + other.name + ".host}", ""
	}
	if secretKey.MatchString(key) && val != "" && !strings.Contains(val, "${") {
		c.setEnv[key] = true
		return "${env." + key + "}", "a credential: set " + key + " in your environment"
	}
	return val, ""
}

// urlParts splits scheme://userinfo@host:port/rest leniently: values may
// hold ${env.X} references that net/url rejects.
var urlParts = regexp.MustCompile(`^([a-zA-Z][a-zA-Z0-9+.-]*)://(?:([^/@]*)@)?([^/:?#@]+)(:\d+)?([/?#].*)?$`)

// subst rewrites compose's ${VAR}, ${VAR:-default} and $VAR for a value
// that goes into binky.toml: a variable .env (or the user) sets stays a
// reference, ${env.VAR}, read at run time from the project's env_file, so
// no value from .env (often a secret) is copied into a committed file. A
// default applies only when .env does not set the variable.
func (c *converter) subst(s string) string {
	return c.vars(s, func(name string) string { return "${env." + name + "}" })
}

// expand resolves variables for binky's own use (which image a service
// runs); the result is not written out.
func (c *converter) expand(s string) string {
	return c.vars(s, func(name string) string { return c.dotenv[name] })
}

func (c *converter) vars(s string, set func(name string) string) string {
	return varRef.ReplaceAllStringFunc(s, func(m string) string {
		if m == "$$" {
			return "$$"
		}
		name, def, hasDef := strings.TrimPrefix(strings.Trim(m, "${}"), "$"), "", false
		for _, sep := range []string{":-", "-"} {
			if i := strings.Index(name, sep); i >= 0 {
				name, def, hasDef = name[:i], name[i+len(sep):], true
				break
			}
		}
		if v, ok := c.dotenv[name]; ok && v != "" {
			return set(name)
		}
		if hasDef {
			return def
		}
		return set(name)
	})
}

var varRef = regexp.MustCompile(`\$\$|\$\{[A-Za-z_][A-Za-z0-9_]*(:?-[^}]*)?\}|\$[A-Za-z_][A-Za-z0-9_]*`)

func (c *converter) render() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by `git binky init` from %s.\n", filepath.Base(c.path))
	b.WriteString("# Read it through: lines marked \"guessed\" need you. `git binky check` validates it.\n\n")
	fmt.Fprintf(&b, "[project]\nname = %q\n", c.project)
	if len(c.dotenv) > 0 {
		b.WriteString("env_file = \".env\"   # compose read .env for ${VAR}; here ${env.VAR} reads it at run time\n")
	}
	groups := map[string][]string{}
	for _, s := range c.services {
		b.WriteString("\n")
		fmt.Fprintf(&b, "[services.%s]\n", s.name)
		if s.composeName != s.name {
			fmt.Fprintf(&b, "# compose name: %s\n", s.composeName)
		}
		if s.adapter != "" {
			fmt.Fprintf(&b, "adapter = %q                  # replaces the %s container: a private slice of one shared server per worktree\n", s.adapter, s.image)
			if s.adminEnv != "" {
				fmt.Fprintf(&b, "admin_url = \"${env.%s}\"   # binky cannot run a %s server itself: point it at one (admin credentials)\n", s.adminEnv, s.adapter)
			} else {
				b.WriteString("# no admin_url: binky runs one shared server for the machine; set admin_url = \"${env.NAME}\" to use yours\n")
			}
		} else {
			if s.guessedCmd != "" {
				fmt.Fprintf(&b, "# guessed: %s\n", s.guessedCmd)
				fmt.Fprintf(&b, "cmd = %q\n", "echo 'binky.toml: write the command that runs "+s.name+"' >&2; exit 1")
			} else {
				cmd, replaced := withPort(s.cmd, s.port)
				if replaced {
					b.WriteString("# the container port in the command is now binky's port for this worktree\n")
				}
				fmt.Fprintf(&b, "cmd = %q\n", cmd)
			}
			if s.cwd != "" {
				fmt.Fprintf(&b, "cwd = %q\n", s.cwd)
			}
			if s.port != "" {
				fmt.Fprintf(&b, "url = %q                        # compose published port %s; the process must listen on $PORT (or ${self.port})\n", s.name, s.port)
			}
		}
		if len(s.dependsOn) > 0 {
			var deps []string
			for _, d := range s.dependsOn {
				if o, ok := c.byName[d]; ok {
					deps = append(deps, strconv.Quote(o.name))
				}
			}
			fmt.Fprintf(&b, "depends_on = [%s]\n", strings.Join(deps, ", "))
		}
		if len(s.envFile) == 1 {
			fmt.Fprintf(&b, "env_file = %q\n", s.envFile[0])
		} else if len(s.envFile) > 1 {
			fmt.Fprintf(&b, "env_file = %q   # compose had %d env files; binky reads one: merge the rest into it\n", s.envFile[0], len(s.envFile))
		}
		if s.health != "" && s.adapter == "" {
			fmt.Fprintf(&b, "health = %s   # %s\n", s.health, s.healthNote)
		}
		if s.adapter == "" && len(s.rawEnv) > 0 {
			fmt.Fprintf(&b, "[services.%s.env]\n", s.name)
			for _, kv := range s.rawEnv {
				v, note := c.envValue(s, kv[0], kv[1])
				if note != "" {
					fmt.Fprintf(&b, "%s = %q   # %s\n", kv[0], v, note)
				} else {
					fmt.Fprintf(&b, "%s = %q\n", kv[0], v)
				}
			}
		} else if s.adapter != "" && len(s.rawEnv) > 0 {
			var keys []string
			for _, kv := range s.rawEnv {
				keys = append(keys, kv[0])
			}
			fmt.Fprintf(&b, "# the container's %s are not needed: the slice has its own name, user and password\n", strings.Join(keys, ", "))
		}
		for _, p := range s.profiles {
			groups[p] = append(groups[p], strconv.Quote(s.name))
		}
	}
	if len(groups) > 0 {
		b.WriteString("\n# compose profiles: git binky up --group NAME starts one (with what it depends on)\n[groups]\n")
		for _, g := range sortedKeys(groups) {
			fmt.Fprintf(&b, "%s = [%s]\n", label(g), strings.Join(groups[g], ", "))
		}
	}
	if len(c.setEnv) > 0 {
		fmt.Fprintf(&b, "\n# Set before `git binky up`: %s\n", strings.Join(sortedSet(c.setEnv), ", "))
	}
	return b.String()
}

// withPort puts ${self.port} where the command names the container port.
func withPort(cmd, port string) (string, bool) {
	if port == "" {
		return cmd, false
	}
	re := regexp.MustCompile(`(^|[\s=:])` + regexp.QuoteMeta(port) + `($|\s)`)
	if !re.MatchString(cmd) {
		return cmd, false
	}
	return re.ReplaceAllString(cmd, "${1}$${self.port}${2}"), true
}

// containerPort returns the first container-side port of a ports/expose list.
func containerPort(v any) string {
	items, _ := v.([]any)
	for _, it := range items {
		switch p := it.(type) {
		case map[string]any:
			if t := str(p["target"]); t != "" {
				return t
			}
		default:
			s := fmt.Sprint(p)
			s = strings.SplitN(s, "/", 2)[0]
			parts := strings.Split(s, ":")
			last := parts[len(parts)-1]
			if i := strings.IndexByte(last, '-'); i >= 0 {
				last = last[:i]
			}
			if _, err := strconv.Atoi(last); err == nil {
				return last
			}
		}
	}
	return ""
}

func str(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	default:
		return fmt.Sprint(x)
	}
}

func list(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			if m, ok := e.(map[string]any); ok { // env_file long syntax
				out = append(out, str(m["path"]))
				continue
			}
			out = append(out, str(e))
		}
		return out
	}
	return nil
}

func keysOrList(v any) []string {
	if m, ok := v.(map[string]any); ok {
		return sortedKeys(m)
	}
	return list(v)
}

// env reads environment as a list of KEY=VALUE or a mapping, in order.
func env(v any) [][2]string {
	var out [][2]string
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			k, val, _ := strings.Cut(str(e), "=")
			out = append(out, [2]string{k, val})
		}
	case map[string]any:
		for _, k := range sortedKeys(x) {
			out = append(out, [2]string{k, str(x[k])})
		}
	}
	return out
}

func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`|&;<>()*?[]#~") {
			out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		} else {
			out[i] = a
		}
	}
	return strings.Join(out, " ")
}

// label makes a name fit binky's: lowercase letters, digits and '-'.
func label(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	out := strings.Trim(b.String(), "-")
	if out == "" {
		return "app"
	}
	return out
}

func readDotenv(path string) (map[string]string, error) {
	out := map[string]string{}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		out[strings.TrimSpace(k)] = v
	}
	return out, sc.Err()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func sortedSet(m map[string]bool) []string { return sortedKeys(m) }

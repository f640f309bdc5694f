package world

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/git-binky/git-binky/gitx"
)

// World is one worktree's world: its repository, its checkout, its config
// and where its state lives.
type World struct {
	Home     Home
	Repo     *gitx.Repo
	Worktree *gitx.Worktree
	Config   *Config
	ID       string
	Project  string
	// Name is the worktree's name as git knows it (BINKY_WORKTREE,
	// ${worktree.name}); Label is its DNS label in URLs, unique in the
	// project (see Standing.Label).
	Name  string
	Label string
	// ProxyPort is where the URL proxy listens (from settings); URLs of
	// services with `url` go through it. HTTPSPort is its TLS front, 0 when
	// https is off.
	ProxyPort int
	HTTPSPort int

	// pinned are the env files read once, by PinEnvFiles, for the trust
	// check of an up: every process that up starts gets these values,
	// whatever the files say by the time it starts.
	pinned map[string]pinnedFile
}

// pinnedFile is one env file as PinEnvFiles read it.
type pinnedFile struct {
	values map[string]string
	err    error
	digest string // what an approval records of it (envFileDigests)
}

// Open finds the world of the worktree named name in the repository around
// dir, or of the worktree dir is in when name is "".
func Open(home Home, dir, name string) (*World, error) {
	repo, wt, err := Locate(dir, name)
	if err != nil {
		return nil, err
	}
	return FromWorktree(home, repo, wt)
}

// Locate finds the worktree named name in the repository around dir, or
// the one dir is in when name is "", without reading its config.
func Locate(dir, name string) (*gitx.Repo, *gitx.Worktree, error) {
	repo, wt, err := gitx.Discover(dir)
	if err != nil && (name == "" || repo == nil) {
		return nil, nil, notInWorktree(err)
	}
	if name != "" {
		if wt, err = repo.Find(name); err != nil {
			return nil, nil, fmt.Errorf("%w (see 'git worktree list', or create it with: git binky up %s)", err, ShellArg(name))
		}
	}
	return repo, wt, nil
}

func notInWorktree(err error) error {
	switch {
	case errors.Is(err, gitx.ErrNotRepository):
		return fmt.Errorf("%w: run git binky inside a repository that has a %s", err, ConfigFile)
	case errors.Is(err, gitx.ErrNotWorktree):
		return fmt.Errorf("%w: cd into a worktree, or name one ('git binky env <name>')", err)
	}
	return err
}

// ErrFolderGone is the error of a worktree whose folder was deleted while
// git still lists it (rm -rf of a worktree).
var ErrFolderGone = errors.New("is gone")

// FromWorktree loads the world of a known worktree.
func FromWorktree(home Home, repo *gitx.Repo, wt *gitx.Worktree) (*World, error) {
	if wt.Missing {
		return nil, fmt.Errorf("worktree %q: its folder %s %w (run 'git binky remove %s' to tear its world down and let git forget it, or restore the folder)", wt.Name, wt.Path, ErrFolderGone, ShellArg(wt.Name))
	}
	cfg, err := LoadConfig(filepath.Join(wt.Path, ConfigFile))
	if errors.Is(err, ErrNoConfig) && wt.NoCheckout {
		// `git worktree add --no-checkout`: the config is committed, so read
		// it from HEAD. Such a world can be provisioned, not started.
		src, gerr := gitx.ShowFile(context.Background(), wt.Path, "HEAD", ConfigFile)
		if gerr != nil {
			return nil, err
		}
		var diags []Diagnostic
		cfg, diags = ParseConfig(filepath.Join(wt.Path, ConfigFile)+" (at HEAD)", src)
		if cfg == nil || hasErrors(diags) {
			return nil, &ConfigError{Diagnostics: diags}
		}
		err = nil
	}
	if err != nil {
		return nil, err
	}
	return FromConfig(home, repo, wt, cfg)
}

// OpenApproved is Open, except for a worktree whose binky.toml does not
// load (a typo mid-edit, or gone a moment) and whose world was started: its world as the
// approved config it was started with, which its services run, and a
// warning that says so and why. An agent editing binky.toml lost the
// running world's logs, restart and curl until the edit was done, exactly
// when it needed them.
func OpenApproved(home Home, dir, name string) (*World, string, error) {
	repo, wt, err := Locate(dir, name)
	if err != nil {
		return nil, "", err
	}
	w, err := FromWorktree(home, repo, wt)
	var ce *ConfigError
	if err == nil || !errors.As(err, &ce) && !errors.Is(err, ErrNoConfig) {
		return w, "", err
	}
	rec, rerr := home.LoadRecord(WorldID(repo.CommonDir, wt.AdminDir))
	if rerr != nil || rec.Approved == "" {
		return nil, "", err
	}
	cfg, aerr := home.ApprovedConfig(rec.Approved, filepath.Join(wt.Path, ConfigFile))
	if aerr != nil {
		return nil, "", err
	}
	approved, werr := FromConfig(home, repo, wt, cfg)
	if werr != nil {
		return nil, "", err
	}
	what := "is broken"
	if errors.Is(err, ErrNoConfig) {
		what = "is gone (an editor saving it, a stash?)"
	}
	return approved, fmt.Sprintf("%s %s, so binky used the config its world was started with: %v", ConfigFile, what, err), nil
}

// FromConfig is the world of a known worktree with the config cfg, which
// need not be the worktree's current file (a restart runs the approved one).
func FromConfig(home Home, repo *gitx.Repo, wt *gitx.Worktree, cfg *Config) (*World, error) {
	fallback := filepath.Base(repo.MainPath)
	if repo.MainPath == "" {
		fallback = strings.TrimSuffix(filepath.Base(repo.CommonDir), ".git")
	}
	settings, err := home.LoadSettings()
	if err != nil && !UsingLastGood(err) {
		return nil, err
	}
	id := WorldID(repo.CommonDir, wt.AdminDir)
	// The label a world was given is its own from then on (it may carry a
	// hash); only a world with no record yet starts from the folded name.
	label := DNSLabel(wt.Name)
	if rec, err := home.LoadRecord(id); err == nil && rec.Label != "" {
		label = rec.Label
	}
	if home.ProxyDown() != "" {
		settings.ProxyPort = 0 // URLs are direct while the proxy is down
	}
	return &World{
		Home:      home,
		Repo:      repo,
		Worktree:  wt,
		Config:    cfg,
		ID:        id,
		Project:   DNSLabel(cfg.ProjectName(fallback)),
		Name:      wt.Name,
		Label:     label,
		ProxyPort: settings.ProxyPort,
		HTTPSPort: map[bool]int{true: settings.HTTPSPort}[settings.HTTPS],
	}, nil
}

// PortKeys lists every port key the config asks for.
func (w *World) PortKeys() []string {
	var keys []string
	for _, n := range w.Config.ServiceNames() {
		keys = append(keys, w.Config.Services[n].PortKeys()...)
	}
	return keys
}

// Ensure makes sure the world has a record and a port for every service that
// asks for one, and returns the record. It is cheap when nothing changed: no
// write happens then, which matters because `env` runs on every shell prompt.
func (w *World) Ensure(ctx context.Context) (*Record, error) {
	return w.Update(ctx, nil)
}

// Update runs fn on the world's record under the world lock and saves it.
// Ports are ensured first, so fn always sees a complete port map. A nil fn
// changes nothing, and nothing is written unless the ports changed.
func (w *World) Update(ctx context.Context, fn func(*Record) error) (*Record, error) {
	settings, err := w.Home.LoadSettings()
	if err != nil && !UsingLastGood(err) {
		return nil, err
	}
	return w.update(ctx, fn, &settings)
}

// Note is Update for a world that is not to run (its config is not
// approved): its record is made or changed, but no port is allocated for
// it. A branch nobody approved must not hold any of the machine's ports.
func (w *World) Note(ctx context.Context, fn func(*Record) error) (*Record, error) {
	return w.update(ctx, fn, nil)
}

// update is Update, allocating ports with settings unless it is nil.
func (w *World) update(ctx context.Context, fn func(*Record) error, settings *Settings) (*Record, error) {
	unlock, err := w.Home.LockWorld(ctx, w.ID)
	if err != nil {
		return nil, err
	}
	defer unlock()
	rec, err := w.ensureLocked(ctx, settings)
	if err != nil || fn == nil {
		return rec, err
	}
	if err := fn(rec); err != nil {
		return rec, err
	}
	return rec, w.Home.SaveRecord(rec)
}

func (w *World) ensureLocked(ctx context.Context, settings *Settings) (*Record, error) {
	rec, err := w.Home.LoadRecord(w.ID)
	dirty := false
	switch {
	case errors.Is(err, os.ErrNotExist):
		// A world this home never had may be another home's: say so
		// rather than take its ports and overwrite its admin copy. Checked
		// and claimed (the first save writes the copy that names this
		// home) under a lock in the worktree's admin folder, which every
		// home takes: two homes taking a new worktree at once both saw no
		// owner, and both ran it.
		release, err := lockOwner(ctx, w.Worktree.AdminDir, w.Worktree.Path)
		if err != nil {
			return nil, err
		}
		if release != nil {
			defer release()
		}
		if err := w.Home.checkOwner(w.Worktree.AdminDir, w.ID, w.Name); err != nil {
			return nil, err
		}
		rec = &Record{ID: w.ID, State: StateNew, Ports: map[string]int{}}
		if cp, err := adminCopy(w.Worktree.AdminDir); err == nil && cp.ID == w.ID && cp.Home != "" {
			if id, err := w.Home.ID(); err == nil && cp.Home == id {
				rec.Orphaned = true
			}
		}
		dirty = true
	case err != nil:
		return nil, err
	case adminReplaced(rec):
		// The record is of a worktree git removed; this one only has its
		// name. Its coordinates are not this worktree's: the daemon tears
		// the old world down (an up does first) and gives this one its own.
		return nil, fmt.Errorf("%w: worktree %s was removed and added again under its name, and its old world is not torn down yet: run 'git binky up' in it (the old world goes, this one gets its own)", ErrReplaced, w.Name)
	}
	if id, err := w.Home.ID(); err == nil && (rec.Home != id || rec.HomeDir != w.Home.Dir) {
		rec.Home, rec.HomeDir = id, w.Home.Dir
		dirty = true
	}
	if rec.Project != w.Project || rec.Worktree != w.Name || rec.Path != w.Worktree.Path ||
		rec.Branch != w.Worktree.Branch || rec.CommonDir != w.Repo.CommonDir || rec.AdminDir != w.Worktree.AdminDir {
		rec.Project, rec.Worktree, rec.Path = w.Project, w.Name, w.Worktree.Path
		rec.Branch, rec.CommonDir, rec.AdminDir, rec.Main = w.Worktree.Branch, w.Repo.CommonDir, w.Worktree.AdminDir, w.Worktree.Main
		dirty = true
	}
	if rec.Label == "" {
		if err := w.chooseLabel(ctx, rec); err != nil {
			return nil, err
		}
	}
	w.Label = rec.Label
	if hosts := w.Hosts(); !equalMaps(hosts, rec.Hosts) {
		rec.Hosts = hosts
		dirty = true
	}
	if groups := w.Config.HostGroups(); !equalMaps(groups, rec.Groups) {
		rec.Groups = groups
		dirty = true
	}
	if dirty {
		// The record must exist before any lease names it, or another
		// allocator would see the lease as stale and take the port.
		if err := w.Home.SaveRecord(rec); err != nil {
			return nil, err
		}
	}
	if settings == nil {
		return rec, nil
	}
	changed, err := w.Home.NewAllocator(*settings).Ensure(ctx, rec, w.PortKeys())
	if changed {
		if serr := w.Home.SaveRecord(rec); serr != nil && err == nil {
			err = serr
		}
	}
	if err != nil {
		return nil, err
	}
	return rec, nil
}

// Host is the proxy host name of a service's url:
// <url>.<worktree>.<project>.<domain>.
func (w *World) Host(url string) string {
	return url + "." + w.Label + "." + w.Project + "." + w.Config.Project.Domain
}

// Hosts maps each service with a url to its proxy host name.
func (w *World) Hosts() map[string]string {
	hosts := map[string]string{}
	for _, n := range w.Config.ServiceNames() {
		if u := w.Config.Services[n].URL; u != "" {
			hosts[n] = w.Host(u)
		}
	}
	return hosts
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

// Coordinates is a world's address book: every service's host, ports and
// URLs, and the environment that carries them.
type Coordinates struct {
	Project  string                    `json:"project"`
	Worktree string                    `json:"worktree"`
	Path     string                    `json:"path"`
	Branch   string                    `json:"branch,omitempty"`
	Services map[string]ServiceAddress `json:"services"`
	Env      map[string]string         `json:"env"`
	// Unmade are the data services with no slice yet (none before the
	// world's first up): their variables are missing, and env says so.
	Unmade []string `json:"unmade,omitempty"`
}

// EnvSchema is the version of EnvDoc: fields may be added, none renamed.
const EnvSchema = 1

// EnvDoc is a world's coordinates as `git binky env --json` prints them and
// the MCP env tool returns them: one document, under the schema version a
// client checks.
type EnvDoc struct {
	Schema int `json:"schema"`
	Coordinates
}

// Doc is c as an EnvDoc.
func (c Coordinates) Doc() EnvDoc { return EnvDoc{Schema: EnvSchema, Coordinates: c} }

// CheckUTF8 refuses coordinates that JSON cannot carry as they are: a
// value that is not UTF-8 (a variable of the caller's environment, a
// branch named in another encoding) would reach a program as U+FFFD, a
// value that is not the world's. It names the first such value, in order.
func (c Coordinates) CheckUTF8() error {
	bad := func(what, v string) error {
		if utf8.ValidString(v) {
			return nil
		}
		return fmt.Errorf("%s holds bytes that are not UTF-8, which JSON cannot carry: read it with 'git binky env --dotenv' or '--shell', which print it as it is", what)
	}
	for _, f := range [][2]string{{"the project's name", c.Project}, {"the worktree's name", c.Worktree}, {"the worktree's path", c.Path}, {"the branch's name", c.Branch}} {
		if err := bad(f[0], f[1]); err != nil {
			return err
		}
	}
	for _, kv := range SortedEnv(c.Env) {
		k, v, _ := strings.Cut(kv, "=")
		if err := bad("variable "+strconv.Quote(k), k+v); err != nil {
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Services)) {
		a := c.Services[name]
		for _, f := range slices.Sorted(maps.Keys(a.Fields)) {
			if err := bad(fmt.Sprintf("service %s's %s", name, f), f+a.Fields[f]); err != nil {
				return err
			}
		}
		if err := bad("service "+name+"'s address", a.URL+a.DirectURL+a.Host); err != nil {
			return err
		}
	}
	return nil
}

// ServiceAddress is where one service of a world can be reached.
type ServiceAddress struct {
	Host      string         `json:"host,omitempty"`
	Port      int            `json:"port,omitempty"`
	Ports     map[string]int `json:"ports,omitempty"`
	URL       string         `json:"url,omitempty"`
	DirectURL string         `json:"direct_url,omitempty"`
	// Fields is what an adapter slice resolved (url, prefix, user, ...).
	Fields map[string]string `json:"fields,omitempty"`
}

// Coordinates computes the world's address book from its record.
func (w *World) Coordinates(rec *Record) Coordinates {
	if rec.Label != "" {
		w.Label = rec.Label
	}
	c := Coordinates{
		Project:  w.Project,
		Worktree: w.Name,
		Path:     w.Worktree.Path,
		Branch:   w.Worktree.Branch,
		Services: map[string]ServiceAddress{},
		Env: map[string]string{
			"BINKY_PROJECT":       w.Project,
			"BINKY_WORKTREE":      w.Name,
			"BINKY_WORKTREE_PATH": w.Worktree.Path,
			"BINKY_BRANCH":        w.Worktree.Branch,
		},
	}
	slices := map[string]SliceRecord{}
	for _, s := range rec.Slices {
		slices[s.Service] = s
	}
	for _, name := range w.Config.ServiceNames() {
		s := w.Config.Services[name]
		stem := EnvStem(name)
		if s.Adapter != "" {
			sl, ok := slices[name]
			if !ok {
				c.Unmade = append(c.Unmade, name) // its tokens stay literal
				continue
			}
			addr := w.Home.SliceAddress(sl)
			a := ServiceAddress{Fields: addr, URL: addr["url"]}
			c.Services[name] = a
			for _, k := range sortedKeys(addr) {
				c.Env[stem+"_"+EnvName(k)] = addr[k]
			}
			continue
		}
		port, ok := rec.Ports[name]
		if !ok {
			continue
		}
		a := ServiceAddress{Host: "127.0.0.1", Port: port}
		a.DirectURL = "http://127.0.0.1:" + strconv.Itoa(port)
		a.URL = a.DirectURL
		if s.URL != "" && w.ProxyPort != 0 {
			// Through the proxy, so a browser (or an agent) reaches the
			// world by name; processes that cannot resolve *.localhost use
			// ${svc.direct_url}.
			a.URL = "http://" + w.Host(s.URL) + ":" + strconv.Itoa(w.ProxyPort)
			if w.HTTPSPort != 0 {
				a.URL = "https://" + w.Host(s.URL) + ":" + strconv.Itoa(w.HTTPSPort)
			}
		}
		c.Env[stem+"_HOST"] = a.Host
		c.Env[stem+"_PORT"] = strconv.Itoa(port)
		c.Env[stem+"_URL"] = a.URL
		c.Env[stem+"_DIRECT_URL"] = a.DirectURL
		for _, pn := range s.Ports {
			if p, ok := rec.Ports[name+"."+pn]; ok {
				if a.Ports == nil {
					a.Ports = map[string]int{}
				}
				a.Ports[pn] = p
				c.Env[stem+"_"+EnvName(pn)+"_PORT"] = strconv.Itoa(p)
			}
		}
		c.Services[name] = a
	}
	return c
}

// Lookup resolves ${...} tokens for service self ("" outside any service)
// against the coordinates and env, the environment ${env.NAME} reads (the
// caller's environment and the env files, not the daemon's own).
func (w *World) Lookup(c Coordinates, self string, env map[string]string) Lookup {
	return func(ref string) (string, bool) {
		ns, field, ok := strings.Cut(ref, ".")
		if !ok {
			return "", false
		}
		switch ns {
		case "env":
			// ${env.X:-default}: the default when X is unset or empty.
			if name, def, hasDef := strings.Cut(field, ":-"); hasDef {
				if v := env[name]; v != "" {
					return v, true
				}
				return def, true
			}
			v, ok := env[field]
			return v, ok
		case "worktree":
			switch field {
			case "name":
				return c.Worktree, true
			case "path":
				return c.Path, true
			case "branch":
				return c.Branch, true
			}
			return "", false
		case "project":
			if field == "name" {
				return c.Project, true
			}
			return "", false
		case "self":
			if self == "" {
				return "", false
			}
			ns = self
		}
		a, ok := c.Services[ns]
		if !ok {
			return "", false
		}
		switch {
		case a.Fields != nil:
			v, ok := a.Fields[field]
			return v, ok
		case field == "port" && a.Port != 0:
			return strconv.Itoa(a.Port), true
		case field == "url" && a.URL != "":
			return a.URL, true
		case field == "direct_url" && a.DirectURL != "":
			return a.DirectURL, true
		case field == "host" && a.Host != "":
			return a.Host, true
		case strings.HasPrefix(field, "ports."):
			if p, ok := a.Ports[strings.TrimPrefix(field, "ports.")]; ok {
				return strconv.Itoa(p), true
			}
		}
		return "", false
	}
}

// MaxEnvFileSize bounds an env file binky reads: a branch may commit one
// that links to /dev/zero or a pipe, and it is read (to know whether it
// is approved) before anyone approved it.
const MaxEnvFileSize = 1 << 20

// ReadEnvFile parses a dotenv file: KEY=value lines, '#' comments, optional
// "export " and quotes. A missing file is an error naming it; so is
// anything but a regular file of at most MaxEnvFileSize.
func ReadEnvFile(path string) (map[string]string, error) {
	b, err := readRegular(path, MaxEnvFileSize)
	if err != nil {
		return nil, envFileError(err)
	}
	return parseEnvFile(path, b)
}

// envFileError says what to do about an env file that cannot be read,
// most often one git never carried into a new worktree.
func envFileError(err error) error {
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("env_file: %w (git does not carry an ignored file into a new worktree: copy it from a worktree that has it, or create it)", err)
	}
	return fmt.Errorf("env_file: %w", err)
}

// PinEnvFiles reads the env files w's config names, once: the trust check
// of an up (Home.TrustedWorld) judges these bytes, and ProcessEnv gives
// every process of that up these values. Read twice, a branch checked out
// in between (while the up waited for its turn, or provisioned) would have
// its env files run unapproved.
func (w *World) PinEnvFiles() {
	w.pinned = map[string]pinnedFile{}
	for _, n := range envFileNames(w.Config) {
		path := filepath.Join(w.Worktree.Path, n)
		b, err := readRegular(path, MaxEnvFileSize)
		var pf pinnedFile
		switch {
		case err != nil:
			pf.digest, pf.err = unreadableDigest(err), envFileError(err)
		default:
			pf.digest = contentDigest(b)
			pf.values, pf.err = parseEnvFile(path, b)
		}
		w.pinned[n] = pf
	}
}

// envFileNames are the env files cfg names, project's first, once each.
func envFileNames(cfg *Config) []string {
	var names []string
	add := func(n string) {
		if n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	add(cfg.Project.EnvFile)
	for _, n := range cfg.ServiceNames() {
		add(cfg.Services[n].EnvFile)
	}
	return names
}

// DotenvQuote writes v as a dotenv value that ReadEnvFile and compose's
// reader both read back as v: bare when nothing in it could be misread,
// else double-quoted with compose's escapes (a backtick is not one).
func DotenvQuote(v string) string {
	// A reader trims what surrounds a bare value (a vertical tab, a
	// no-break space as much as a space).
	if v != "" && !strings.ContainsAny(v, " \t\r\n\"'#$\\`") && strings.TrimSpace(v) == v {
		return v
	}
	return `"` + dotenvEscapes.Replace(v) + `"`
}

var dotenvEscapes = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`, "$", `\$`)

// unescapeDotenv decodes the escapes of a double-quoted value as compose's
// reader does (\n, \t, \", \\, \$ ...); any other backslash stays.
func unescapeDotenv(v string) string {
	if !strings.Contains(v, `\`) {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] != '\\' || i+1 == len(v) {
			b.WriteByte(v[i])
			continue
		}
		if r, ok := dotenvEscape(v[i+1]); ok {
			b.WriteByte(r)
			i++
			continue
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

// dotenvEscape is the byte the escape \c stands for in a double-quoted
// dotenv value.
func dotenvEscape(c byte) (byte, bool) {
	switch c {
	case 'a':
		return '\a', true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	case 'v':
		return '\v', true
	case '$', '"', '\\':
		return c, true
	}
	return 0, false
}

// parseEnvFile parses the content b of the env file at path.
func parseEnvFile(path string, b []byte) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || !validEnvName(k) {
			return nil, fmt.Errorf("%s:%d: expected KEY=value", path, n)
		}
		v = strings.TrimSpace(v)
		switch {
		case len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"':
			v = unescapeDotenv(v[1 : len(v)-1])
		case len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'':
			v = v[1 : len(v)-1]
		}
		out[k] = v
	}
	return out, sc.Err()
}

// SortedEnv returns env as KEY=value pairs sorted by key.
func SortedEnv(env map[string]string) []string {
	keys := sortedKeys(env)
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k + "=" + env[k]
	}
	sort.Strings(out)
	return out
}

// ProcessEnv is the environment a process of this world runs with: base
// (the caller's environment), the project's env_file, the service's
// env_file, the whole coordinate map, PORT (the service's own port) and
// the service's own env, later ones winning. service "" is for commands
// that belong to no service (verify checks, migrations).
func (w *World) ProcessEnv(rec *Record, base []string, service string) (map[string]string, error) {
	return w.ProcessEnvFor(w.Coordinates(rec), rec, base, service)
}

// ProcessEnvFor is ProcessEnv with the world's coordinates already worked
// out (coords is w.Coordinates(rec)), for callers that build the env of
// every service at once: the coordinates are the same for all of them.
func (w *World) ProcessEnvFor(coords Coordinates, rec *Record, base []string, service string) (map[string]string, error) {
	env, err := w.processEnv(coords, rec, base, service, nil)
	if err == nil && service != "" {
		for _, name := range w.Config.adminOnlyEnv(w.Config.Services[service]) {
			delete(env, name)
		}
	}
	return env, err
}

// adminOnlyEnv is what s's process must not inherit: the variables that
// name a server's admin credentials (the ${env.X} of any service's
// admin_url or options, as the README recommends writing them), unless s
// reads one itself (its cmd, env, health, migrate or seed). Inherited
// from the caller's shell or an env file, `PG_ADMIN` handed every world
// the key to every other world's slices.
func (c *Config) adminOnlyEnv(s *Service) []string {
	admin := map[string]bool{}
	for _, o := range c.Services {
		values := []string{o.AdminURL}
		for _, v := range o.Options {
			if str, ok := v.(string); ok {
				values = append(values, str)
			}
		}
		for _, v := range values {
			for _, name := range envNames(v) {
				admin[name] = true
			}
		}
	}
	if len(admin) == 0 || s == nil {
		return nil
	}
	for _, f := range s.fields() {
		if f.key[0] == "admin_url" {
			continue
		}
		for _, name := range envNames(f.value) {
			delete(admin, name)
		}
	}
	out := make([]string, 0, len(admin))
	for name := range admin {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// envNames are the X of the ${env.X} tokens in v, with or without a
// default.
func envNames(v string) []string {
	var out []string
	for _, ref := range Tokens(v) {
		name, ok := strings.CutPrefix(ref, "env.")
		if !ok {
			continue
		}
		name, _, _ = strings.Cut(name, ":-")
		if name != "" {
			out = append(out, name)
		}
	}
	return out
}

// processEnv is ProcessEnvFor, adding to unset (when not nil) each
// ${env.X} without a default that a value of the service's env table read
// while X was not set: such a value keeps the token as written, and
// `FOO = "${env.FOO}"` then sets FOO to the text "${env.FOO}".
func (w *World) processEnv(coords Coordinates, rec *Record, base []string, service string, unset map[string]bool) (map[string]string, error) {
	env := make(map[string]string, len(base)+32)
	for _, kv := range base {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	files := []string{w.Config.Project.EnvFile}
	var s *Service
	if service != "" {
		s = w.Config.Services[service]
		if s == nil {
			return nil, fmt.Errorf("no service %q in %s", service, w.Config.Path)
		}
		files = append(files, s.EnvFile)
	}
	for _, f := range files {
		if f == "" {
			continue
		}
		var fileEnv map[string]string
		var err error
		if pf, ok := w.pinned[f]; ok {
			fileEnv, err = pf.values, pf.err
		} else {
			fileEnv, err = ReadEnvFile(filepath.Join(w.Worktree.Path, f))
		}
		if err != nil {
			return nil, err
		}
		for k, v := range fileEnv {
			env[k] = v
		}
	}
	for k, v := range coords.Env {
		env[k] = v
	}
	if s == nil {
		return env, nil
	}
	if port := rec.Ports[service]; port != 0 && (s.PortEnv == nil || *s.PortEnv) {
		env["PORT"] = strconv.Itoa(port)
	}
	lookup := w.Lookup(coords, service, env)
	if unset != nil {
		all := lookup
		lookup = func(ref string) (string, bool) {
			v, ok := all(ref)
			// (A default, ${env.X:-v}, is always found.)
			if name, isEnv := strings.CutPrefix(ref, "env."); isEnv && !ok && name != "" {
				unset[name] = true
			}
			return v, ok
		}
	}
	for _, k := range sortedKeys(s.Env) {
		env[k] = Interpolate(s.Env[k], lookup)
	}
	return env, nil
}

// OpenCoordinates is `git binky env`: the coordinates of the world named
// name (or around dir), allocating its ports on first use.
func OpenCoordinates(ctx context.Context, home Home, dir, name string) (Coordinates, error) {
	w, err := Open(home, dir, name)
	if err != nil {
		return Coordinates{}, err
	}
	rec, err := w.Ensure(ctx)
	if err != nil {
		return Coordinates{}, err
	}
	if len(rec.Slices) > 0 {
		// A slice's password comes from the home's secret: with it
		// damaged, env printed no DB_URL and said nothing.
		if _, err := home.Secret(); err != nil {
			return Coordinates{}, err
		}
	}
	return w.Coordinates(rec), nil
}

// LogPaths maps each service that has a process, a migrate or a seed (or
// only service, when not "") to its log file.
func (w *World) LogPaths(service string) (map[string]string, error) {
	dir := LogDir(w.Worktree.AdminDir)
	out := map[string]string{}
	for _, n := range w.Config.ServiceNames() {
		s := w.Config.Services[n]
		// A slice's migrate and seed write to its service's log too.
		if (s.Adapter == "" || s.Migrate != "" || s.Seed != "") && (service == "" || service == n) {
			out[n] = filepath.Join(dir, n+".log")
		}
	}
	if service != "" && len(out) == 0 {
		if s := w.Config.Services[service]; s != nil {
			return nil, fmt.Errorf("service %q of %s has no log: it runs no process, migrate or seed", service, w.Config.Path)
		}
		return nil, fmt.Errorf("no service %q in %s", service, w.Config.Path)
	}
	return out, nil
}

// lockOwner takes the lock under which a home claims a worktree (see
// ensureLocked). Where it cannot be made (no admin folder, one binky
// cannot write, a worktree whose files git has deleted: it deletes the
// admin folder next, and a lock file made meanwhile left git unable to)
// the claim goes on unlocked, as before: nil, nil. A ctx that ends while
// it waits is an error.
func lockOwner(ctx context.Context, adminDir, worktree string) (func(), error) {
	if adminDir == "" {
		return nil, nil
	}
	dir, err := MakeStateDir(adminDir, worktree)
	if err != nil {
		return nil, nil
	}
	unlock, err := Lock(ctx, filepath.Join(dir, "owner.lock"))
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, nil
	}
	return unlock, nil
}

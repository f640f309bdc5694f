package world

import (
	"net/url"
	"regexp"
	"sort"
	"strings"
	"unicode"

	"github.com/git-binky/git-binky/logfile"
)

// Hidden is what a redacted credential reads as.
const Hidden = "xxxxx"

// secrets collects the credentials in an environment: the values of
// *_PASSWORD-like variables, the passwords inside URLs (decoded and as
// written, which may escape them differently than Go would) and URL
// parameters that name a credential (?password=, ?api_key=).
func secrets(env map[string]string) []string {
	seen := map[string]bool{}
	add := func(v string) {
		if v == "" {
			return
		}
		seen[v] = true
		for _, esc := range []string{url.QueryEscape(v), url.PathEscape(v)} {
			seen[esc] = true
		}
	}
	for k, v := range env {
		if v == "" {
			continue
		}
		switch {
		case secretName(k) && !plainValue(v):
			add(v)
		case SecretKey(k) && keyLike(v):
			// A credential's name not beyond doubt (GH_TOKEN_PERSONAL,
			// CACHE_KEY): hidden when the value reads as a key, so that a
			// TOKEN_STORE of redis does not cut "redis" out of the logs.
			add(v)
		}
		add(dsnPassword(v))
		u, err := url.Parse(v)
		if err != nil {
			// Not a URL Go reads (a stray %, a space), but its password
			// is still text a reader sees: as written.
			add(rawPassword(v))
			continue
		}
		if u.User != nil {
			if pw, ok := u.User.Password(); ok {
				add(pw)
			}
			add(rawPassword(v))
		}
		if u.RawQuery != "" {
			for name, vals := range u.Query() {
				if secretName(name) {
					for _, val := range vals {
						add(val)
					}
				}
			}
			for _, kv := range strings.Split(u.RawQuery, "&") {
				if name, val, ok := strings.Cut(kv, "="); ok && secretName(name) {
					add(val) // as written
				}
			}
		}
	}
	out := make([]string, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	// Longest first, so a secret that contains another is hidden whole.
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// plainValue is a value that is a setting's whatever its name says
// (SMTP_PASSWORD_ENCRYPTED=true): hidden, it would be cut out of every
// line of every log.
func plainValue(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "false", "yes", "no", "on", "off", "none", "null", "nil", "enabled", "disabled", "required", "optional":
		return true
	}
	return false
}

// keyLike is a value that reads as a key or token: 16 characters or more,
// letters and digits both, no space.
func keyLike(v string) bool {
	return len(v) >= 16 && strings.ContainsAny(v, "0123456789") && strings.IndexFunc(v, unicode.IsLetter) >= 0 && !strings.ContainsAny(v, " \t\n")
}

// rawPassword is the password of a URL as its text writes it, escapes and
// all: between the authority's first ':' and its last '@'.
func rawPassword(v string) string {
	i := strings.Index(v, "://")
	if i < 0 {
		return ""
	}
	auth := v[i+3:]
	if end := strings.IndexAny(auth, "/?#"); end >= 0 {
		auth = auth[:end]
	}
	at := strings.LastIndexByte(auth, '@')
	if at < 0 {
		return ""
	}
	_, pw, ok := strings.Cut(auth[:at], ":")
	if !ok {
		return ""
	}
	return pw
}

// dsnRE is a Go MySQL driver's DSN, user:password@tcp(host:port)/db (or
// unix(...), or @/db for the default): no scheme, so no URL.
var dsnRE = regexp.MustCompile(`^[^:@/\s]+:(\S*)@(?:[a-z0-9]+\(|/)`)

// dsnPassword is the password of such a DSN, or "".
func dsnPassword(v string) string {
	if strings.Contains(v, "://") {
		return ""
	}
	if m := dsnRE.FindStringSubmatch(v); m != nil {
		return m[1]
	}
	return ""
}

func hide(v string, secrets []string) string {
	for _, s := range secrets {
		if len(s) >= 4 { // a one-letter "password" would blank the text around it
			v = strings.ReplaceAll(v, s, Hidden)
		}
	}
	// A log line cut in the middle of a secret ends with its first part,
	// which no whole secret matches.
	if i := strings.LastIndex(v, logfile.CutMark); i >= 0 {
		head := v[:i]
		for _, s := range secrets {
			for k := len(s) - 1; k >= 4; k-- {
				if strings.HasSuffix(head, s[:k]) {
					head = head[:len(head)-k] + Hidden
					break
				}
			}
		}
		v = head + v[i:]
	}
	// A text that begins inside a line (a page read from an offset, the
	// kept tail of a check's output) may begin with a secret's last part.
	if rest, ok := strings.CutPrefix(v, logfile.CutStartMark); ok {
		for _, s := range secrets {
			for k := len(s) - 1; k >= 4; k-- {
				if strings.HasPrefix(rest, s[len(s)-k:]) {
					rest = Hidden + rest[k:]
					break
				}
			}
		}
		v = logfile.CutStartMark + rest
	}
	return v
}

// RedactEnv returns env with every credential hidden wherever it appears:
// in its own variable, in URLs and in DSNs that repeat it.
func RedactEnv(env map[string]string) map[string]string {
	sec := secrets(env)
	out := make(map[string]string, len(env))
	for k, v := range env {
		out[k] = hide(v, sec)
	}
	return out
}

// Hider returns a function that hides the coordinates' credentials
// wherever they appear in a text (a log line, a check's output): what a
// world's processes print can hold its own URL.
func (c Coordinates) Hider() func(string) string { return Hider(c.flat()) }

// Hider returns a function that hides env's credentials wherever they
// appear in a text.
func Hider(env map[string]string) func(string) string {
	sec := secrets(env)
	return func(v string) string { return hide(v, sec) }
}

// ProcessHider hides what the world's processes could print of their
// credentials: the coordinates' (slice passwords), and every service's
// environment as its processes get it (base, the caller's environment;
// its env files; its env table). A service echoing the STRIPE_SECRET_KEY
// of its env_file or the ${env.TOKEN} of its env showed it through MCP
// logs and verify, which hid the coordinates' alone.
//
// Each of bases is an environment a process may have started from (the
// caller's of the up, this process's own): their secrets are hidden too,
// whether or not a service's environment can be built now.
func (w *World) ProcessHider(rec *Record, bases ...[]string) func(string) string {
	coords := w.Coordinates(rec)
	envs := []map[string]string{coords.flat()}
	add := func(env map[string]string) { envs = append(envs, env) }
	for _, base := range bases {
		env := map[string]string{}
		for _, kv := range base {
			if k, v, ok := strings.Cut(kv, "="); ok {
				env[k] = v
			}
		}
		add(env)
		if w.Config == nil {
			continue
		}
		for _, n := range w.Config.ServiceNames() {
			// Before the admin variables are taken out: an env file's
			// admin URL is still hidden wherever it shows.
			if env, err := w.processEnv(coords, rec, base, n, nil); err == nil {
				add(env)
			}
		}
	}
	return HiderOf(envs...)
}

// HiderOf hides the credentials of each of envs (each judged by its own
// names) wherever they appear in a text, the longest first.
func HiderOf(envs ...map[string]string) func(string) string {
	seen := map[string]bool{}
	var sec []string
	for _, env := range envs {
		for _, s := range secrets(env) {
			if !seen[s] {
				seen[s] = true
				sec = append(sec, s)
			}
		}
	}
	sort.Slice(sec, func(i, j int) bool { return len(sec[i]) > len(sec[j]) })
	return func(v string) string { return hide(v, sec) }
}

// flat is every value of the coordinates, by variable or service.field.
func (c Coordinates) flat() map[string]string {
	all := map[string]string{}
	for k, v := range c.Env {
		all[k] = v
	}
	for svc, a := range c.Services {
		for f, v := range a.Fields {
			all[svc+"."+f] = v
		}
	}
	return all
}

// Redacted returns the coordinates with every credential hidden, in the
// environment and in each service's fields alike.
func (c Coordinates) Redacted() Coordinates {
	sec := secrets(c.flat())
	out := c
	out.Env = make(map[string]string, len(c.Env))
	for k, v := range c.Env {
		out.Env[k] = hide(v, sec)
	}
	out.Services = make(map[string]ServiceAddress, len(c.Services))
	for svc, a := range c.Services {
		b := a
		if a.Fields != nil {
			b.Fields = make(map[string]string, len(a.Fields))
			for f, v := range a.Fields {
				b.Fields[f] = hide(v, sec)
			}
		}
		b.URL, b.DirectURL = hide(a.URL, sec), hide(a.DirectURL, sec)
		out.Services[svc] = b
	}
	return out
}

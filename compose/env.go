package compose

import (
	"fmt"
	"maps"
	"math"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/compose-spec/compose-go/v2/types"
	"github.com/git-binky/git-binky/adapters"
	"github.com/git-binky/git-binky/smallfile"
	"github.com/git-binky/git-binky/world"
)

// fieldSuffixes name the slice field a variable carries by how its name
// ends (DB_USER → user, WORDPRESS_DB_PASSWORD → password), longest first.
// A suffix applies only to kinds whose row lists that field, so REDIS_DB
// (a database index) is not a database name.
var fieldSuffixes = []struct{ suffix, field string }{
	{"CONNECTION_STRING", "url"}, {"SECRET_ACCESS_KEY", "secret_key"}, {"BOOTSTRAP_SERVERS", "brokers"},
	{"ACCESS_KEY_ID", "access_key"}, {"ACCESS_KEY", "access_key"}, {"SECRET_KEY", "secret_key"},
	{"HOSTNAME", "host"}, {"USERNAME", "user"}, {"PASSWORD", "password"}, {"DATABASE", "name"},
	{"DB_NAME", "name"}, {"DBNAME", "name"}, {"PASSWD", "password"}, {"BROKERS", "brokers"},
	{"BUCKET", "bucket"}, {"PREFIX", "prefix"}, {"SERVER", "host"}, {"VHOST", "vhost"},
	{"LOGIN", "user"}, {"HOST", "host"}, {"PORT", "port"}, {"USER", "user"}, {"PASS", "password"},
	{"NAME", "name"}, {"URL", "url"}, {"URI", "url"}, {"DSN", "dsn"}, {"DSN", "url"}, {"PWD", "password"}, {"DB", "name"},
}

// splitField splits key into a prefix and the field its suffix names, for
// a kind with fields.
func splitField(key string, fields []string) (prefix, field string, ok bool) {
	up := strings.ToUpper(key)
	for _, fs := range fieldSuffixes {
		if !hasField(fields, fs.field) {
			continue
		}
		if up == fs.suffix {
			return "", fs.field, true
		}
		if strings.HasSuffix(up, fs.suffix) {
			p := up[:len(up)-len(fs.suffix)]
			return p, fs.field, true
		}
	}
	return "", "", false
}

// exactField is the field a whole name (after its prefix) names: NAME,
// DB, PASSWD...
func exactField(rest string, fields []string) (string, bool) {
	rest = strings.TrimPrefix(strings.ToUpper(rest), "_")
	for _, fs := range fieldSuffixes {
		if rest == fs.suffix && hasField(fields, fs.field) {
			return fs.field, true
		}
	}
	return "", false
}

func hasField(fields []string, f string) bool {
	for _, x := range fields {
		if x == f {
			return true
		}
	}
	return false
}

// kindPrefixes are the variable prefixes that name a kind: its name and
// aliases (POSTGRES_, VALKEY_) and the stems of the names in its Env list
// (PGHOST → PG, PG_).
func kindPrefixes(k *adapters.Kind) []string {
	var out []string
	for _, n := range append([]string{k.Name}, k.Aliases...) {
		out = append(out, strings.ToUpper(world.EnvName(n))+"_")
	}
	for _, e := range k.Env {
		if p, _, ok := splitField(e.Name, k.Fields); ok && p != "" {
			out = append(out, p)
			if !strings.HasSuffix(p, "_") {
				out = append(out, p+"_")
			}
		}
	}
	return out
}

// convertEnv writes the service's environment: a variable that pointed at
// a database container now reads the slice, PORT is binky's port, another
// service's address is that service's, and a credential is ${env.NAME}.
func (c *converter) convertEnv(sv *service) {
	raw := sv.rawEnv()
	vals := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		v := raw[k]
		if v == nil {
			// KEY alone: compose passes the caller's value through.
			vals[k] = "${env." + k + "}"
			c.refs[k] = true
			continue
		}
		vals[k] = c.vars(sv, c.src.written(k, v))
	}
	// First the variables whose value names a slice (a URL, host:port or
	// host): they fix which prefix addresses which slice, so
	// WORDPRESS_DB_HOST: db makes WORDPRESS_DB_USER db's user.
	for _, k := range slices.Sorted(maps.Keys(vals)) {
		if t, _ := c.sliceRef(k, vals[k]); t != nil {
			if p, f, ok := splitField(k, t.kind.Fields); ok && (f == "host" || f == "url" || f == "port") {
				sv.prefixes[p] = t
			}
			if !containsService(sv.slices, t) {
				sv.slices = append(sv.slices, t) // addressed, though compose did not say depends_on
			}
		}
	}
	// A kind the project has one slice of is the one its variables mean
	// (POSTGRES_DB in an app that never said depends_on).
	perKind := map[string][]*service{}
	for _, t := range c.services {
		if t.kind != nil {
			perKind[t.kind.Name] = append(perKind[t.kind.Name], t)
		}
	}
	for _, ts := range perKind {
		if len(ts) != 1 || containsService(sv.slices, ts[0]) {
			continue
		}
		for k := range vals {
			for _, kp := range kindPrefixes(ts[0].kind) {
				if rest, ok := strings.CutPrefix(strings.ToUpper(k), kp); ok {
					if _, ok := exactField(rest, ts[0].kind.Fields); ok && !containsService(sv.slices, ts[0]) {
						sv.slices = append(sv.slices, ts[0])
					}
				}
			}
		}
	}
	wired := map[*service]map[string]bool{}
	var invalid []string
	for _, k := range slices.Sorted(maps.Keys(vals)) {
		if !validEnvName(k) {
			invalid = append(invalid, k)
			continue
		}
		v, note := c.envValue(sv, k, vals[k], raw, wired)
		if name, def, ok := c.plainDefault(raw[k]); ok && v == def {
			v = "${env." + name + ":-" + def + "}" // still the developer's to set
		}
		sv.env = append(sv.env, line{key: k, value: tomlString(v), comment: note})
	}
	// The app's env_file may address the container too (DB_HOST=postgres,
	// DB_PASSWORD=...): its values are read to find what points at a slice,
	// never copied; what does is written here, overriding the file.
	for _, f := range sv.cfg.EnvFiles {
		file := envFileVars(filepath.Join(c.src.dir, f.Path))
		for _, k := range slices.Sorted(maps.Keys(file)) {
			if t, _ := c.sliceRef(k, file[k]); t != nil {
				if p, fl, ok := splitField(k, t.kind.Fields); ok && (fl == "host" || fl == "url" || fl == "port") {
					sv.prefixes[p] = t
				}
				if !containsService(sv.slices, t) {
					sv.slices = append(sv.slices, t)
				}
			}
		}
		for _, k := range slices.Sorted(maps.Keys(file)) {
			if _, ok := vals[k]; ok || !validEnvName(k) {
				continue
			}
			v := file[k] // matched, never written
			var out, note string
			if t, _ := c.sliceRef(k, v); t != nil {
				out, note = c.envValue(sv, k, v, raw, wired)
			} else if t, field := c.sliceField(sv, k, v, raw); t != nil {
				c.wire(wired, t, field)
				out, note = "${"+t.name+"."+field+"}", "the "+t.name+" slice's "+field
			} else {
				continue
			}
			vals[k] = ""
			sv.env = append(sv.env, line{key: k, value: tomlString(out), comment: note + "; overrides " + commentText(f.Path)})
		}
	}
	// A host given without its port (compose relied on the server's
	// default port, which binky's shared server does not listen on) gets
	// the port beside it, under its prefix (PGHOST → PGPORT): libpq and
	// most apps read one there, and would go to the default port.
	for _, p := range slices.Sorted(maps.Keys(sv.prefixes)) {
		t := sv.prefixes[p]
		if !hasField(t.kind.Fields, "port") || !wired[t]["host"] {
			continue
		}
		host, port := false, false
		for k := range vals {
			if kp, f, ok := splitField(k, t.kind.Fields); ok && kp == p {
				host = host || f == "host" && !strings.Contains(vals[k], ":")
				port = port || f == "port" || f == "url"
			}
		}
		name := p + "PORT"
		if _, taken := vals[name]; !host || port || taken {
			continue
		}
		vals[name] = ""
		sv.env = append(sv.env, line{key: name, value: tomlString("${" + t.name + ".port}"),
			comment: "added: the " + t.name + " slice's port (compose relied on the default port, which binky's server does not use)"})
		c.guessed = append(c.guessed, fmt.Sprintf("%s: added %s = ${%s.port} beside its host (compose relied on the default port, which binky's server does not use; an app that reads the port elsewhere, as host:port in its host variable, needs ${%s.host}:${%s.port} there)", sv.name, name, t.name, t.name, t.name))
	}
	// An app given only the parts gets the URL too, under the first name
	// the kind's row gives for it (DATABASE_URL).
	for _, t := range sv.slices {
		got := wired[t]
		if len(got) == 0 || got["url"] {
			continue
		}
		for _, e := range t.kind.Env {
			if e.Field != "url" {
				continue
			}
			if _, taken := vals[e.Name]; !taken {
				vals[e.Name] = ""
				sv.env = append(sv.env, line{key: e.Name, value: tomlString("${" + t.name + ".url}"),
					comment: "added: the " + t.name + " slice's URL, for apps that read " + e.Name})
				c.guessed = append(c.guessed, fmt.Sprintf("%s: added %s = ${%s.url} (compose gave only the parts)", sv.name, e.Name, t.name))
			}
			break
		}
	}
	for _, t := range sv.slices {
		if len(wired[t]) > 0 {
			continue
		}
		name := ""
		for _, e := range t.kind.Env {
			if e.Field == "url" {
				name = e.Name
				break
			}
		}
		if name != "" {
			c.leave(sv, fmt.Sprintf("it uses the %s slice, but compose gave it no address for it (it is likely in the app's code or config): point it at ${%s.url}, e.g. %s = \"${%s.url}\" in env", t.name, t.name, name, t.name))
		}
	}
	if len(invalid) > 0 {
		c.leave(sv, "compose set "+commentText(strings.Join(invalid, ", "))+", which are not variable names binky can set: configure them another way")
	}
}

func (c *converter) wire(wired map[*service]map[string]bool, t *service, field string) {
	if wired[t] == nil {
		wired[t] = map[string]bool{}
	}
	wired[t][field] = true
}

func validEnvName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isNameByte(s[i], false) {
			return false
		}
	}
	return true
}

// envFileVars reads an env file's variables, only to find which point at
// a slice: their values are never written.
func envFileVars(path string) map[string]string {
	out := map[string]string{}
	b, err := smallfile.Read(path, world.MaxEnvFileSize) // not a device, a FIFO or a runaway file
	if err != nil {
		return out
	}
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "export "))
		if l == "" || l[0] == '#' {
			continue
		}
		if k, v, ok := strings.Cut(l, "="); ok {
			v = strings.TrimSpace(v)
			if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
				v = v[1 : len(v)-1]
			}
			out[strings.TrimSpace(k)] = v
		}
	}
	return out
}

func (c *converter) envValue(sv *service, key, val string, raw map[string]any, wired map[*service]map[string]bool) (string, string) {
	if key == "PORT" && sv.oneshot {
		// A oneshot gets no port: ${self.port} would stay literal.
		return c.scrub(sv, key, val), "compose's value: a oneshot runs to completion and has no port of its own"
	}
	if key == "PORT" {
		return "${self.port}", "binky's port for this service (compose set " + fmt.Sprint(commentText(c.maskIfSecret(key, val))) + ")"
	}
	// A URL, host:port or host naming a slice.
	if t, kind := c.sliceRef(key, val); t != nil {
		_, field, _ := splitField(key, t.kind.Fields)
		switch {
		case kind == "url":
			c.wire(wired, t, "url")
			v := c.sliceURL(t, val)
			if lost := lostURLParts(t, val, v); lost != "" {
				c.leave(sv, key+": "+lost)
			}
			return v, "the " + t.name + " slice (was a URL to the " + t.compose + " container)"
		case kind == "hostport" && field == "brokers":
			c.wire(wired, t, "brokers")
			return "${" + t.name + ".brokers}", "the " + t.name + " slice's brokers"
		case kind == "hostport":
			c.wire(wired, t, "host")
			return "${" + t.name + ".host}:${" + t.name + ".port}", "the " + t.name + " slice's address"
		case field == "url" && hasField(t.kind.Fields, "url"):
			c.wire(wired, t, "url")
			return "${" + t.name + ".url}", "the " + t.name + " slice"
		default:
			c.wire(wired, t, "host")
			return "${" + t.name + ".host}", "the " + t.name + " slice's host"
		}
	}
	if t, field := c.sliceField(sv, key, val, raw); t != nil {
		c.wire(wired, t, field)
		return "${" + t.name + "." + field + "}", "the " + t.name + " slice's " + field
	}
	v, masked := val, false
	if !credentialKey(key) {
		v, masked = c.maskURLPassword(key, val)
	}
	if hostKey(key) || strings.Contains(v, ":") {
		v = c.rewriteHosts(sv, v, true)
	}
	if m := listenAddr.FindStringSubmatch(v); m != nil {
		if tok, ok := sv.portToken("self", m[2]); ok {
			if everyInterface(m[1]) {
				return "127.0.0.1:" + tok, "this service's own port, on loopback (" + m[1] + " would listen on every interface)"
			}
			return m[1] + ":" + tok, "this service's own port"
		}
	}
	if sv.kind == nil && everyInterface(v) {
		// HOST=0.0.0.0: the address its own process listens on, as in its
		// command (loopbackCmd); binky's proxy and probes dial 127.0.0.1.
		return "127.0.0.1", "loopback: " + v + " would listen on every interface"
	}
	if _, f, ok := splitField(key, []string{"port"}); ok && f == "port" {
		if tok, ok := sv.portToken("self", v); ok {
			return tok, "this service's own port"
		}
	}
	if v != val {
		note := "another service's address in this world"
		if m := loopbackAt.FindStringSubmatch(val); m != nil {
			if hp, ok := c.published[m[2]]; ok {
				note = "was " + m[0] + ", which compose published for " + hp.sv.compose + ": its address in this world"
			}
		} else if !strings.Contains(strings.ReplaceAll(v, "${self.", ""), "${") {
			note = "this service's own address in this world"
		}
		if masked {
			note = "its credential is kept out; hosts are this world's"
		}
		return c.scrub(sv, key, v), note
	}
	if s, secret := c.secretValue(key, v); secret {
		return s, "a credential: set " + key + " in your environment or .env"
	}
	return c.scrub(sv, key, v), ""
}

func (c *converter) maskIfSecret(key, v string) string {
	if credentialKey(key) || looksSecret(v) {
		return "a value"
	}
	return v
}

// sliceRef reports whether v addresses a slice service: as a URL, a
// host:port or a bare host.
func (c *converter) sliceRef(key, v string) (*service, string) {
	if m := urlParts.FindStringSubmatch(v); m != nil {
		if t, _ := c.target(nil, m[4], strings.TrimPrefix(m[5], ":"), true); t != nil && t.kind != nil {
			return t, "url"
		}
		return nil, ""
	}
	if h, p, ok := strings.Cut(v, ":"); ok && isPort(p) {
		if t, _ := c.target(nil, h, p, true); t != nil && t.kind != nil {
			return t, "hostport"
		}
	}
	if t := c.byHost[strings.ToLower(v)]; t != nil && t.kind != nil && hostKey(key) {
		return t, "host"
	}
	return nil, ""
}

// hostKey is a variable whose name says it holds a host: a bare value
// equal to a service's name elsewhere (MYSQL_DATABASE: wordpress) is a
// database name, not the wordpress service.
func hostKey(key string) bool {
	if _, f, ok := splitField(key, []string{"host", "url"}); ok {
		return f == "host" || f == "url"
	}
	up := strings.ToUpper(key)
	for _, s := range []string{"ADDR", "ADDRESS", "ENDPOINT", "SEEDS", "HOSTS", "NODES", "SERVERS"} {
		if strings.HasSuffix(up, s) {
			return true
		}
	}
	return false
}

func isPort(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n > 0 && n < 65536
}

// lostURLParts says what of the app's URL v to slice t the slice's
// whole URL (written, ${t.url}) does not carry: its options (the query's
// names only, since values can be credentials), or a Redis database other
// than 0, which a world does not have. "" when nothing is lost.
func lostURLParts(t *service, v, written string) string {
	if written != "${"+t.name+".url}" {
		return "" // written from its parts: the app's path and query kept
	}
	m := urlParts.FindStringSubmatch(v)
	if m == nil {
		return ""
	}
	path, query, _ := strings.Cut(m[6], "?")
	var lost []string
	if q, err := url.ParseQuery(query); err == nil && len(q) > 0 {
		lost = append(lost, fmt.Sprintf("the app's URL had the options %s, which ${%s.url} does not carry: add them to its connection settings if it needs them",
			strings.Join(slices.Sorted(maps.Keys(q)), ", "), t.name))
	}
	if db := strings.Trim(path, "/"); t.kind.Name == "redis" && db != "" && db != "0" {
		lost = append(lost, fmt.Sprintf("the app used Redis database %s; a world has database 0 only, its keys under ${%s.prefix}: data the app kept in separate databases now shares one, so keep their key names apart", db, t.name))
	}
	return strings.Join(lost, "; ")
}

// sliceURL is a URL to slice t in the form the app wrote: the slice's own
// URL when the scheme is the kind's, else the app's scheme (jdbc:,
// postgresql+asyncpg://) around the slice's parts.
func (c *converter) sliceURL(t *service, v string) string {
	m := urlParts.FindStringSubmatch(v)
	scheme := strings.ToLower(m[2])
	schemes := append([]string{t.kind.Name}, t.kind.Aliases...)
	if s, _, ok := strings.Cut(t.kind.AdminURL, "://"); ok {
		schemes = append(schemes, s) // amqp for RabbitMQ: its url is one
	}
	for _, n := range schemes {
		if m[1] == "" && (scheme == n || scheme == n+"ql" || scheme == n+"s") {
			return "${" + t.name + ".url}"
		}
	}
	tok := func(f string) string { return "${" + t.name + "." + f + "}" }
	var b strings.Builder
	b.WriteString(m[1] + m[2] + "://")
	if m[3] != "" && hasField(t.kind.Fields, "user") {
		// Credentials only where the app wrote them: an endpoint URL
		// (http://minio:9000) or a JDBC URL takes them elsewhere.
		b.WriteString(tok("user"))
		if hasField(t.kind.Fields, "password") {
			b.WriteString(":" + tok("password"))
		}
		b.WriteString("@")
	}
	b.WriteString(tok("host") + ":" + tok("port"))
	rest := m[6]
	if hasField(t.kind.Fields, "name") && strings.HasPrefix(rest, "/") {
		_, query, _ := strings.Cut(rest, "?")
		rest = "/" + tok("name")
		if query != "" {
			rest += "?" + query
		}
	}
	b.WriteString(rest)
	return b.String()
}

// sliceField finds the slice a variable of sv addresses by name, and the
// field it carries: a name in the kind's Env list (DATABASE_URL), a prefix
// another variable tied to the slice (WORDPRESS_DB_), a prefix naming the
// kind (POSTGRES_, MYSQL_, PG), or a value equal to the container's own
// (DB_USER: app where the db container had POSTGRES_USER: app).
func (c *converter) sliceField(sv *service, key, val string, raw map[string]any) (*service, string) {
	var byKind = map[string][]*service{}
	for _, t := range sv.slices {
		byKind[t.kind.Name] = append(byKind[t.kind.Name], t)
	}
	for _, t := range sv.slices {
		for _, e := range t.kind.Env {
			if e.Name == key && len(byKind[t.kind.Name]) == 1 {
				return t, e.Field
			}
		}
	}
	up := strings.ToUpper(key)
	for _, p := range slices.Sorted(maps.Keys(sv.prefixes)) {
		t := sv.prefixes[p]
		if rest, ok := strings.CutPrefix(up, p); ok {
			if f, ok := exactField(rest, t.kind.Fields); ok {
				return t, f
			}
		}
	}
	for _, t := range sv.slices {
		if len(byKind[t.kind.Name]) == 1 {
			for _, kp := range kindPrefixes(t.kind) {
				if rest, ok := strings.CutPrefix(up, kp); ok {
					if f, ok := exactField(rest, t.kind.Fields); ok {
						return t, f
					}
				}
			}
		}
		_, f, ok := splitField(key, t.kind.Fields)
		if !ok {
			continue
		}
		if f == "port" {
			if _, own := t.portToken(t.name, val); own {
				return t, f // DB_PORT: 5432, the port of the db container
			}
			continue
		}
		if val == "" || len(val) < 2 || !namesSlice(key, t) {
			continue
		}
		for tk, tv := range t.rawEnv() {
			if tv == nil {
				continue
			}
			_, tf, ok := splitField(tk, t.kind.Fields)
			if ok && tf == f && c.vars(t, c.src.written(tk, tv)) == val {
				c.guess(sv, key+" reads the "+t.name+" slice's "+f+": its value was the "+t.compose+" container's "+tk)
				return t, f
			}
		}
	}
	return nil, ""
}

// dbWords are the words of a variable's name that speak of a database
// whatever its kind: APP_DB_USER, SPRING_DATASOURCE_USERNAME, MYSQL_DATABASE.
var dbWords = []string{"DB", "DATABASE", "DATASOURCE", "SQL"}

// namesSlice reports whether key's name has a word naming a database, t's
// kind or t itself (APP_DB_NAME, PG_USER, ORDERSDB_USER): only then is a
// value equal to the container's a clue (OTEL_SERVICE_NAME: shop beside
// POSTGRES_DB: shop is the app's own name, not the database's).
func namesSlice(key string, t *service) bool {
	words := append(slices.Clone(dbWords), strings.ToUpper(world.EnvName(t.name)), strings.ToUpper(world.EnvName(t.compose)))
	for _, kp := range kindPrefixes(t.kind) {
		words = append(words, strings.Trim(kp, "_"))
	}
	for _, w := range strings.FieldsFunc(strings.ToUpper(key), func(r rune) bool { return r == '_' }) {
		if slices.Contains(words, w) || strings.HasSuffix(w, "DB") || strings.HasPrefix(w, "DB") { // ORDERSDB_USER, DBNAME
			return true
		}
	}
	return false
}

// everyInterface reports whether addr is an every-interface address.
func everyInterface(addr string) bool { return addr == "0.0.0.0" || addr == "::" || addr == "[::]" }

// listenAddr is an address a process listens on: 0.0.0.0:9000, :8080.
var listenAddr = regexp.MustCompile(`^(0\.0\.0\.0|127\.0\.0\.1|localhost|\[::\]|::|):(\d{1,5})$`)

// urlParts splits [jdbc:]scheme://userinfo@host:port/rest leniently:
// values may hold ${env.X} that net/url rejects.
var urlParts = regexp.MustCompile(`^(jdbc:)?([a-zA-Z][a-zA-Z0-9+.-]*)://(?:([^/@]*)@)?([^/:?#@,]+)(:\d+)?([/?#].*)?$`)

// urlIn finds URLs inside longer text.
var urlIn = regexp.MustCompile(`(?:jdbc:)?[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'"]+`)

// hostPortIn finds host:port and scheme://host[:port] inside longer text
// (broker lists, command lines).
var hostPortIn = regexp.MustCompile(`(^|[^A-Za-z0-9_.-])([A-Za-z0-9][A-Za-z0-9_.-]*)(:\d{1,5})?`)

// rewriteHosts replaces another service's host:port (or URL host) in v by
// its address in this world. In an env value (env), localhost:PORT is
// also what compose published on that host port (target).
func (c *converter) rewriteHosts(sv *service, v string, env bool) string {
	if m := urlParts.FindStringSubmatch(v); m != nil {
		t, port := c.target(sv, m[4], strings.TrimPrefix(m[5], ":"), env)
		if t == nil {
			return v
		}
		if t.kind != nil {
			return c.sliceURL(t, v)
		}
		if port != strings.TrimPrefix(m[5], ":") || c.byHost[strings.ToLower(m[4])] == nil {
			// localhost:PORT, as a browser reached it: an http URL to a
			// service's main port is the service's URL in this world.
			if m[1] == "" && m[3] == "" && strings.EqualFold(m[2], "http") && t.main != nil && t.main.target == parseTarget(port) {
				rest := m[6]
				if rest == "/" {
					rest = "" // the URL itself: ${api.url} has no slash to add
				}
				return "${" + tokenName(t, sv) + ".url}" + rest
			}
		}
		addr, ok := c.processAddr(t, tokenName(t, sv), m[2], port)
		if !ok {
			return v
		}
		userinfo := ""
		if m[3] != "" {
			userinfo = m[3] + "@"
		}
		return m[1] + m[2] + "://" + userinfo + addr + m[6]
	}
	if t := c.byHost[strings.ToLower(v)]; t != nil && t != sv && t.kind == nil {
		return "${" + t.name + ".host}"
	}
	return hostPortIn.ReplaceAllStringFunc(v, func(s string) string {
		m := hostPortIn.FindStringSubmatch(s)
		if m[3] == "" {
			return s
		}
		t, port := c.target(sv, m[2], m[3][1:], env)
		if t == nil || t == sv && c.byHost[strings.ToLower(m[2])] == nil {
			return s // its own listen address on loopback: listenAddr's to write
		}
		if t.kind != nil {
			return m[1] + "${" + t.name + ".host}:${" + t.name + ".port}"
		}
		if addr, ok := c.processAddr(t, tokenName(t, sv), "", port); ok {
			return m[1] + addr
		}
		return s
	})
}

// target is the service host:port names, seen from sv (nil: any), and its
// container port: a compose host (db:5432); in an env value (env), also
// the service that published that host port on the machine's own loopback
// (localhost:8080, host.docker.internal:8080: what a browser or an app
// run outside compose reached), else sv's own container port. (In a
// command, localhost is the container's own: ownPorts.)
func (c *converter) target(sv *service, host, port string, env bool) (*service, string) {
	if t := c.byHost[strings.ToLower(host)]; t != nil {
		return t, port
	}
	if !env {
		return nil, ""
	}
	switch strings.ToLower(host) {
	case "localhost", "127.0.0.1":
		// The container's own port first: ADDRESS=127.0.0.1:8000 is where
		// it listens, even where another service published host port 8000.
		if sv != nil && sv.kind == nil {
			if _, own := sv.portToken("self", port); own {
				return sv, port
			}
		}
	case "host.docker.internal": // the machine itself, never the container
	default:
		return nil, ""
	}
	if hp, ok := c.published[port]; ok && port != "" {
		return hp.sv, hp.target
	}
	return nil, ""
}

// parseTarget is port as a container port (0 for none).
func parseTarget(port string) uint32 {
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return 0
	}
	return uint32(n)
}

// loopbackAt finds a host:port on the machine's own loopback.
var loopbackAt = regexp.MustCompile(`(?i)(localhost|127\.0\.0\.1|host\.docker\.internal):(\d{1,5})`)

// tokenName is how sv's config names t: self for itself.
func tokenName(t, sv *service) string {
	if t == sv {
		return "self"
	}
	return t.name
}

// processAddr is ${t.host}:<the token of port> for a process service,
// named name in the tokens.
func (c *converter) processAddr(t *service, name, scheme, port string) (string, bool) {
	if port == "" {
		switch strings.ToLower(scheme) {
		case "http", "ws":
			port = "80"
		case "https", "wss":
			port = "443"
		}
	}
	if tok, ok := t.portToken(name, port); ok {
		return "${" + name + ".host}:" + tok, true
	}
	if port == "" && t.main != nil {
		return "${" + name + ".host}:${" + name + ".port}", true
	}
	return "", false
}

// plainDefault reports whether a value is one reference with a default
// (${LOG_LEVEL:-info}) that .env does not set, the default plain text that
// a ${env.NAME:-default} token can hold, and no credential.
func (c *converter) plainDefault(v any) (name, def string, ok bool) {
	s, isString := v.(string)
	if !isString {
		return "", "", false
	}
	parts := parseVars(s)
	if len(parts) != 1 || parts[0].name == "" || (parts[0].op != ":-" && parts[0].op != "-") {
		return "", "", false
	}
	p := parts[0]
	if _, set := c.src.dotenv[p.name]; set || credentialKey(p.name) {
		return "", "", false
	}
	for _, a := range p.arg {
		if a.name != "" || strings.ContainsAny(a.text, "${}") {
			return "", "", false
		}
		def += a.text
	}
	return p.name, def, true
}

// vars turns compose's variable references into binky's: a variable .env
// sets is read at run time (${env.NAME}), so no value of .env is copied; a
// default is written only when it is no credential; $$ stays a literal $.
func (c *converter) vars(sv *service, s string) string {
	return c.varParts(parseVars(s))
}

func (c *converter) varParts(parts []part) string {
	var b strings.Builder
	for i, p := range parts {
		if p.name == "" {
			if p.text == "$$" {
				// compose's $$ is a literal $; binky's literal ${ is $${.
				if i+1 < len(parts) && strings.HasPrefix(parts[i+1].text, "{") {
					b.WriteString("$$")
				} else {
					b.WriteString("$")
				}
				continue
			}
			b.WriteString(strings.ReplaceAll(p.text, "${", "$${"))
			continue
		}
		v, set := c.src.dotenv[p.name]
		ref := "${env." + p.name + "}"
		switch p.op {
		case ":-", "-":
			if set && (v != "" || p.op == "-") {
				c.refs[p.name] = true
				b.WriteString(ref)
				continue
			}
			def := c.varParts(p.arg)
			if credentialKey(p.name) || looksSecret(literal(p.arg, func(string) (string, bool) { return "", false })) {
				c.refs[p.name] = true
				c.secrets[p.name] = true
				b.WriteString(ref)
				continue
			}
			b.WriteString(def)
		case ":+", "+":
			if set && (v != "" || p.op == "+") {
				b.WriteString(c.varParts(p.arg))
			}
		default:
			c.refs[p.name] = true
			if credentialKey(p.name) {
				c.secrets[p.name] = true
			}
			b.WriteString(ref)
		}
	}
	return b.String()
}

// text converts free text (a command line, a health command): variables,
// other services' addresses, this service's own container ports, and
// credentials.
func (c *converter) text(sv *service, s string, ownPorts bool) string {
	v := c.vars(sv, s)
	// A URL inside a command line is converted as one on its own: its
	// password kept out, its host this world's.
	v = urlIn.ReplaceAllStringFunc(v, func(u string) string {
		m := urlParts.FindStringSubmatch(u)
		if m == nil {
			return u
		}
		t := c.byHost[strings.ToLower(m[4])]
		if t != nil && t.kind != nil {
			return c.sliceURL(t, u) // the slice's own credentials replace the container's
		}
		u, _ = c.maskURLPassword(world.EnvStem(sv.name), u)
		if t != nil {
			return c.rewriteHosts(sv, u, false)
		}
		return u
	})
	v = c.rewriteHosts(sv, v, false)
	if ownPorts {
		v = c.ownPorts(sv, v)
	}
	return c.scrub(sv, "", v)
}

// ownPort finds the service's container port numbers in a command line.
var ownPort = regexp.MustCompile(`(^|[\s=:'",])(\d{2,5})($|[\s'"/,])`)

func (c *converter) ownPorts(sv *service, v string) string {
	return ownPort.ReplaceAllStringFunc(v, func(s string) string {
		m := ownPort.FindStringSubmatch(s)
		if tok, ok := sv.portToken("self", m[2]); ok {
			return m[1] + tok + m[3]
		}
		return s
	})
}

// secretValue decides whether an environment value is a credential to keep
// out: by its name (PASSWORD, _KEY, _TOKEN...) or by its look (sk_live_,
// a long random string, a password in a URL).
func (c *converter) secretValue(key, v string) (string, bool) {
	lit := stripTokens(v)
	if strings.TrimSpace(lit) == "" {
		for _, r := range world.Tokens(v) {
			if n, ok := strings.CutPrefix(r, "env."); ok && credentialKey(key) {
				c.secrets[n] = true
			}
		}
		return v, false
	}
	if credentialKey(key) || looksSecret(lit) || urlPassword(v) || credentialInside(lit) {
		c.secrets[key] = true
		c.refs[key] = true
		c.secretVal[lit] = key
		return "${env." + key + "}", true
	}
	return v, false
}

// credentialKey reports whether a variable's name says it holds a
// credential: the names world.SecretKey knows, which check warns of.
func credentialKey(name string) bool {
	return world.SecretKey(name)
}

// tokenUser is URL userinfo with no password that is a key itself: a
// Sentry DSN's (https://<public key>@o1.ingest.sentry.io/1), a token given
// as the user (https://ghp_...@github.com). A user name (git, deploy,
// service01) is not one.
func tokenUser(u string) bool {
	if u == "" || stripTokens(u) != u {
		return false
	}
	if looksSecret(u) {
		return true
	}
	var digit, letter bool
	for i := 0; i < len(u); i++ {
		switch c := u[i]; {
		case isDigit(c):
			digit = true
		case c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F':
			letter = true
		default:
			return false
		}
	}
	return len(u) >= 16 && digit && letter // a hex key
}

// maskURLPassword replaces a literal password in a URL by ${env.NAME}:
// the name of the variable that holds the same password elsewhere in the
// project (the database container's MYSQL_ROOT_PASSWORD), else KEY_PASSWORD.
func (c *converter) maskURLPassword(key, v string) (string, bool) {
	m := urlParts.FindStringSubmatchIndex(v)
	if m == nil || m[6] < 0 {
		return v, false
	}
	userinfo := v[m[6]:m[7]]
	user, pw, ok := strings.Cut(userinfo, ":")
	if !ok && tokenUser(userinfo) {
		name := c.secretName(userinfo, world.EnvName(key)+"_TOKEN")
		return v[:m[6]] + "${env." + name + "}" + v[m[7]:], true
	}
	if !ok || pw == "" || stripTokens(pw) == "" {
		return v, false
	}
	name := c.secretName(pw, world.EnvName(key)+"_PASSWORD")
	return v[:m[6]] + user + ":${env." + name + "}" + v[m[7]:], true
}

// secretName is the variable that holds the credential lit in some
// service's environment, or fallback; either way it is listed.
func (c *converter) secretName(lit, fallback string) string {
	name := fallback
	if n, ok := c.secretVal[lit]; ok {
		name = n
	} else {
		// A name another credential holds gets a number: one variable
		// for two passwords would lose one (--password=A -pB both became
		// ${env.WEB_PASSWORD}).
		for i := 2; c.heldByAnother(name, lit); i++ {
			name = fmt.Sprintf("%s_%d", fallback, i)
		}
	search:
		for _, t := range c.services {
			env := t.rawEnv()
			for _, k := range slices.Sorted(maps.Keys(env)) {
				if env[k] != nil && credentialKey(k) && c.src.written(k, env[k]) == lit {
					name = k
					break search
				}
			}
		}
	}
	c.secrets[name] = true
	c.refs[name] = true
	c.secretVal[lit] = name
	return name
}

// heldByAnother reports whether name already stands for a credential
// other than lit.
func (c *converter) heldByAnother(name, lit string) bool {
	for l, n := range c.secretVal {
		if n == name && l != lit {
			return true
		}
	}
	return false
}

func urlPassword(v string) bool {
	m := urlParts.FindStringSubmatch(v)
	if m == nil {
		return false
	}
	_, pw, ok := strings.Cut(m[3], ":")
	return ok && pw != "" && stripTokens(pw) != ""
}

func stripTokens(v string) string {
	for _, r := range world.Tokens(v) {
		v = strings.ReplaceAll(v, "${"+r+"}", "")
	}
	return v
}

// secretLooks is a known token format, anywhere in a value: after
// "Bearer " or a word (init wrote AUTH = "Bearer eyJ..." into the
// committed file while it matched only at the start).
var secretLooks = regexp.MustCompile(`\b(sk|pk|rk)_(live|test)_|\bgh[pousr]_[A-Za-z0-9]{16,}|\bxox[abpr]-|\bAKIA[0-9A-Z]{16}\b|-----BEGIN|\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.`)

// connPassword is a connection string's password: Server=db;Password=...,
// libpq's host=db password=..., a Go MySQL DSN's user:pw@tcp(...), and an
// HTTP Basic credential.
var connPassword = regexp.MustCompile(`(?i)(^|[;\s])(password|pwd)\s*=\s*[^;\s]|^[^:@/\s]+:[^@/\s]+@(tcp|unix)\(|\bBasic [A-Za-z0-9+/]{8,}={0,2}`)

// credentialInside reports a value that holds a credential inside it: a
// URL parameter named as one (?password=, &token=) or a connection
// string's Password= or Pwd=.
func credentialInside(v string) bool {
	if connPassword.MatchString(v) {
		return true
	}
	u, err := url.Parse(v)
	if err != nil || u.RawQuery == "" {
		return false
	}
	for name, vals := range u.Query() {
		if credentialKey(name) && slices.ContainsFunc(vals, func(val string) bool { return val != "" }) {
			return true
		}
	}
	return false
}

// looksSecret is a value that is a credential whatever its name: a known
// token format, or a long random-looking string.
func looksSecret(v string) bool {
	if secretLooks.MatchString(v) {
		return true
	}
	if len(v) < 20 || strings.ContainsAny(v, " \t/:.\\${}") {
		return false
	}
	var lower, upper, digit int
	for _, r := range v {
		switch {
		case r >= 'a' && r <= 'z':
			lower++
		case r >= 'A' && r <= 'Z':
			upper++
		case r >= '0' && r <= '9':
			digit++
		case r == '_' || r == '-' || r == '+' || r == '=':
		default:
			return false
		}
	}
	classes := 0
	for _, n := range []int{lower, upper, digit} {
		if n > 0 {
			classes++
		}
	}
	// Random text changes between lower case, upper case and digits all the
	// time; words and numbers do not (--stale-threshold-seconds=900).
	return digit > 0 && classes >= 2 && entropy(v) >= 3.5 && float64(classChanges(v)) >= 0.3*float64(len(v))
}

func classChanges(s string) int {
	class := func(r rune) int {
		switch {
		case r >= 'a' && r <= 'z':
			return 1
		case r >= 'A' && r <= 'Z':
			return 2
		case r >= '0' && r <= '9':
			return 3
		}
		return 0
	}
	n, prev := 0, -1
	for _, r := range s {
		c := class(r)
		if c == 0 {
			continue // a separator: the words on each side decide
		}
		if prev >= 0 && c != prev {
			n++
		}
		prev = c
	}
	return n
}

func entropy(s string) float64 {
	counts := map[rune]int{}
	for _, r := range s {
		counts[r]++
	}
	h := 0.0
	for _, n := range counts {
		p := float64(n) / float64(len(s))
		h -= p * math.Log2(p)
	}
	return h
}

// secretWord is a word of a command line that may be a token or key.
var secretWord = regexp.MustCompile(`[A-Za-z0-9_+=-]{20,}`)

// flagRules are credentials given as command-line options: pre is what
// stays, val the credential. inVar: the rule holds in an environment value
// too (JAVA_OPTS, a variable of options); a one-letter option there is as
// often text ("Acme -prod") or another program's (celery's -P gevent).
var flagRules = []struct {
	re    string
	inVar bool
	ok    func(pre, val string) bool
	// client: a one-letter flag, which is a password only to the database
	// clients it names (mysql -pSECRET, redis-cli -a x, mongosh -p x; a
	// mysql -p db prompts, and db is a database); to mkdir, cp, rsync or
	// docker the same letters mean something else.
	client func(pre, program string) bool
	// where, when set, is what the command must also hold for the rule
	// to apply (SQL that makes or changes a user, for its PASSWORD 'x').
	where *regexp.Regexp
}{
	// openssl's -passout pass:x, -passin pass:x (env:, file: and fd: name
	// where the password is, and stay); before the next rule, which would
	// take pass:x whole
	{`(?P<pre>(?:^|\s)-(?:passin|passout|pass|password|passphrase)\s+'pass:)(?P<val>[^']+)`, true, nil, nil, nil},
	{`(?P<pre>(?:^|\s)-(?:passin|passout|pass|password|passphrase)\s+\\?"pass:)(?P<val>[^"\\]+)`, true, nil, nil, nil},
	{`(?P<pre>(?:^|\s)-(?:passin|passout|pass|password|passphrase)\s+pass:)(?P<val>[^\s'"]+)`, true, nil, nil, nil},
	// --password=x, --requirepass x, --api-key x, --auth=x
	{`(?P<pre>(?:^|\s)(?i:--?(?:[a-z]+[-_])*(?:pass|password|passwd|pwd|secret|token|api-?key|requirepass|auth))(?:=|\s+))(?P<val>'[^']*'|"[^"]*"|[^\s'"]+)`, true, nil, nil, nil},
	// keytool's -storepass x, -keypass x, -srcstorepass x, -destkeypass x
	// (-storepass:env NAME and :file name where it is, and stay)
	{`(?P<pre>(?:^|\s)-(?:src|dest)?(?:store|key)pass\s+)(?P<val>'[^']*'|"[^"]*"|[^\s'"]+)`, true, nil, nil, nil},
	// keytool -storepasswd / -keypasswd -new x: the new password
	{`(?P<pre>(?:^|[\s/'"])keytool\s+(?:\S+\s+)*?-new\s+)(?P<val>'[^']*'|"[^"]*"|[^\s'"]+)`, false, nil, nil, nil},
	// a JVM system property: -Dspring.datasource.password=x
	{`(?P<pre>(?:^|\s)-D[A-Za-z0-9_.-]+=)(?P<val>'[^']*'|"[^"]*"|[^\s'"]+)`, true, func(pre, _ string) bool {
		prop := strings.TrimSuffix(strings.TrimSpace(pre)[2:], "=")
		return credentialKey(prop) || credentialKey(prop[strings.LastIndexByte(prop, '.')+1:])
	}, nil, nil},
	// curl's -u user:password, --user user:password
	{`(?P<pre>(?:^|\s)(?:-u|--user)(?:=|\s+)[^\s:'"]+:)(?P<val>[^\s'"]+)`, true, func(pre, val string) bool {
		user := pre[strings.LastIndexAny(pre, " \t\n=")+1 : len(pre)-1]
		// user:group (--user 1000:1000, www-data:www-data) is no login,
		// and redis-cli -u redis://... a URL (its password is masked as
		// one).
		return val != user && !(allDigits(user) && allDigits(val)) && !strings.HasPrefix(val, "//")
	}, nil, nil},
	// mysql's -pSECRET; not gcc's -pthread, -pipe, -pie, -pg, -pedantic
	{`(?P<pre>(?:^|\s)-p)(?P<val>[^\s'"]+)`, false, func(_, val string) bool {
		return !slices.Contains([]string{"thread", "ipe", "ie", "g", "edantic", "edantic-errors"}, val)
	}, func(_, program string) bool {
		return strings.HasPrefix(program, "mysql") || strings.HasPrefix(program, "mariadb")
	}, nil},
	// a variable set for one command or exported: PGPASSWORD=x psql,
	// env MYSQL_PWD=x mysql, export API_TOKEN=x
	{`(?P<pre>(?:^|[\s'"])[A-Za-z_][A-Za-z0-9_]*=)(?P<val>\\"[^"\\]*\\"|'[^']*'|"[^"]*"|[^\s'"\\]+)`, true, func(pre, val string) bool {
		// Not a value the shell makes ($PW, `cat file`) or a format's (%s).
		return credentialKey(strings.Trim(pre, " \t\n'\"=")) && !strings.ContainsAny(val, "$`") && !strings.HasPrefix(val, "%")
	}, nil, nil},
	// a password as a positional argument: rabbitmqctl add_user NAME PW,
	// mc alias set NAME URL KEY SECRET, mysqladmin password PW,
	// redis-cli CONFIG SET requirepass PW
	{`(?P<pre>(?:^|[\s'"])(?:rabbitmqctl\s+(?:\S+\s+)*?(?:add_user|change_password)\s+\S+|mc\s+(?:alias\s+set|config\s+host\s+add)\s+\S+\s+\S+\s+\S+|(?:mysqladmin|mariadb-admin)\s+(?:\S+\s+)*?password|(?i:config\s+set\s+(?:requirepass|masterauth)))\s+)(?P<val>'[^']*'|"[^"]*"|[^\s'"]+)`, false, nil, nil, nil},
	// htpasswd's batch mode, the password after the user: -nb USER PW
	// (printed, no file), -b[c] FILE USER PW (-C takes a cost);
	// mosquitto_passwd -b FILE USER PW
	{`(?P<pre>(?:^|[\s/'"])htpasswd\s+(?:-[A-Za-z]+(?:\s+\d+)?\s+)*?-[A-Za-z]*n[A-Za-z]*(?:\s+\d+)?\s+(?:-[A-Za-z]+(?:\s+\d+)?\s+)*` + shellWord + `\s+)(?P<val>` + shellWord + `)`, false, func(pre, _ string) bool {
		return batchFlags(pre, true)
	}, nil, nil},
	{`(?P<pre>(?:^|[\s/'"])(?:htpasswd|mosquitto_passwd)\s+(?:-[A-Za-z]+(?:\s+\d+)?\s+)+` + shellWord + `\s+` + shellWord + `\s+)(?P<val>` + shellWord + `)`, false, func(pre, _ string) bool {
		return batchFlags(pre, false)
	}, nil, nil},
	// Redis's AUTH [user] PW as the command redis-cli runs (after its
	// options): the last word is the password (fed on stdin: scrubStdin)
	{`(?P<pre>(?:^|[\s/'"])(?:redis|valkey|keydb)-cli(?:\s+(?:` + redisValueOption + `\s+` + shellWord + `|--?[A-Za-z][A-Za-z0-9-]*))*\s+(?i:AUTH)\s+(?:` + shellWord + `\s+)?)(?P<val>` + shellWord + `)`, false, func(pre, _ string) bool {
		return authIsTheCommand(pre)
	}, nil, nil},
	// SQL in a command that makes or changes a user: CREATE USER app WITH
	// PASSWORD 'x', ALTER USER root IDENTIFIED BY 'x', SET PASSWORD FOR
	// root = 'x' (the quotes stay: the SQL needs them)
	{`(?P<pre>(?:^|[\s'"])(?i:IDENTIFIED\s+(?:WITH\s+\S+\s+)?BY|PASSWORD|SET\s+PASSWORD(?:\s+FOR\s+\S+)?\s*=\s*(?:PASSWORD\s*\(\s*)?)\s*')(?P<val>[^']+)`, false, nil, nil,
		regexp.MustCompile(`(?i)\b(?:CREATE|ALTER)\s+(?:USER|ROLE)\b|\bIDENTIFIED\b|\bSET\s+PASSWORD\b`)},
	// redis-cli's -a x, mongosh's -p x; not psql's -p 5432
	{`(?P<pre>(?:^|\s)(?:-a|-p)\s+)(?P<val>[^\s'"]+)`, false, func(pre, val string) bool {
		return strings.TrimSpace(pre) == "-a" || !isPort(val)
	}, func(pre, program string) bool {
		if strings.TrimSpace(pre) == "-a" {
			return strings.HasSuffix(program, "-cli")
		}
		return strings.HasPrefix(program, "mongo")
	}, nil},
}

// shellWord is one word of a command line, quoted or not, that is no
// operator of the shell's (a redirection, a pipe, a subshell's end).
const shellWord = `(?:'[^']*'|\\?"[^"\\]*\\?"|[^\s'"<>|;&()\\]+)`

// redisValueOption is an option of redis-cli's that takes a value: what
// follows it is that value (-h auth is a host), never its command.
const redisValueOption = `(?:-[hpsauridnDt]|--(?:user|pass|cacert|cacertdir|cert|key|tls-ciphers|tls-ciphersuites|sni|pattern|quoted-pattern|count|rdb|functions-rdb|pipe-timeout|memkeys-samples|eval|lru-test|cluster-[a-z-]+))`

// redisValueOptionRE is redisValueOption alone.
var redisValueOptionRE = regexp.MustCompile(`^` + redisValueOption + `$`)

// authIsTheCommand reports whether the AUTH that pre ends with (redis-cli,
// its options, AUTH and maybe a user) is the command redis-cli runs: every
// word before it an option or an option's value (-h auth is a host).
func authIsTheCommand(pre string) bool {
	f := strings.Fields(pre)
	i := slices.IndexFunc(f, func(w string) bool { return strings.HasSuffix(strings.Trim(w, `'"`), "-cli") })
	if i < 0 {
		return false
	}
	for i++; i < len(f); i++ {
		switch {
		case redisValueOptionRE.MatchString(f[i]):
			i++
		case strings.HasPrefix(f[i], "-"):
		default:
			return strings.EqualFold(f[i], "AUTH") && len(f)-i-1 <= 1
		}
	}
	return false
}

// batchFlags reports whether an htpasswd-style command's options (in pre)
// ask for batch mode (-b: the password is an argument), and print mode
// (-n: no file before the user) as given.
func batchFlags(pre string, printed bool) bool {
	var b, n bool
	for _, f := range strings.Fields(pre) {
		if opts, ok := strings.CutPrefix(f, "-"); ok {
			b = b || strings.Contains(opts, "b")
			n = n || strings.Contains(opts, "n")
		}
	}
	return b && n == printed
}

// statementSep splits a command line into commands, a line break
// not being one: a quoted SQL statement may span lines.
var statementSep = regexp.MustCompile(`&&|\|\||[;|]`)

// statementAt is the command of v that holds offset i, its lines joined.
func statementAt(v string, i int) string {
	start, end := 0, len(v)
	for _, m := range statementSep.FindAllStringIndex(v, -1) {
		if m[1] <= i {
			start = m[1]
		} else if m[0] >= i {
			end = m[0]
			break
		}
	}
	return v[start:end]
}

// commandSep splits a command line into the commands it runs: a flag
// means what the program of its own command says.
var commandSep = regexp.MustCompile(`&&|\|\||[;|\n]`)

// passwordLike is a one-letter flag's value that reads as a password
// whatever the program: letters and digits, six or more, and nothing of
// a path, an address or an option (mkdir -p /run/app, docker -p 8080:80).
func passwordLike(v string) bool {
	return len(v) >= 6 && strings.ContainsAny(v, "0123456789") && strings.IndexFunc(v, unicode.IsLetter) >= 0 &&
		!strings.ContainsAny(v, "/.:=,")
}

// passwordClient names the database clients that take a password as a
// one-letter flag.
var passwordClient = regexp.MustCompile(`(?:^|[\s/'"])(mysql|mysqladmin|mysqldump|mysqlcheck|mysqlimport|mysqlshow|mysqlsh|mariadb|mariadb-admin|mariadb-dump|mariadb-check|redis-cli|valkey-cli|keydb-cli|mongo|mongosh|mongodump|mongorestore|mongoexport|mongoimport|mongostat|mongotop)(?:$|[\s'"])`)

// flagCredential matches any of flagRules; its groups pre0, val0, pre1...
// say which.
var flagCredential = func() *regexp.Regexp {
	alts := make([]string, len(flagRules))
	for i, r := range flagRules {
		re := strings.NewReplacer("?P<pre>", fmt.Sprintf("?P<pre%d>", i), "?P<val>", fmt.Sprintf("?P<val%d>", i)).Replace(r.re)
		alts[i] = "(?:" + re + ")"
	}
	return regexp.MustCompile(strings.Join(alts, "|"))
}()

// plainWords are option values that are settings, not credentials
// (--auth=none, -Dsecret.enabled=true).
var plainWords = map[string]bool{"true": true, "false": true, "yes": true, "no": true, "on": true, "off": true,
	"none": true, "null": true, "nil": true, "enabled": true, "disabled": true, "enable": true, "disable": true,
	"required": true, "optional": true, "basic": true, "bearer": true, "digest": true}

// namesWhere reports whether an option's value says where the password
// is rather than being it (openssl's file:, env:, fd:, stdin).
func namesWhere(v string) bool {
	for _, p := range []string{"file:", "env:", "fd:"} {
		if strings.HasPrefix(v, p) {
			return true
		}
	}
	return v == "stdin"
}

func allDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// scrub replaces literal credentials in free text by ${env.NAME}: values
// already kept out elsewhere, and passwords given as command-line flags.
// In an environment value (key set), whose own name decides the rest
// (secretValue), only the flags.
func (c *converter) scrub(sv *service, key, v string) string {
	return c.scrubIn(sv, key, v, "", false)
}

// clientIn is the database client a command runs (passwordClient), or "".
func clientIn(cmd string) string {
	m := passwordClient.FindStringSubmatch(cmd)
	if m == nil {
		return ""
	}
	return m[1]
}

// scrubIn is scrub; with fixed set, program is the program of all of v (an
// exec form's argv[0]), else each command of v says its own.
func (c *converter) scrubIn(sv *service, key, v, program string, fixed bool) string {
	if key == "" {
		for _, lit := range slices.Sorted(maps.Keys(c.secretVal)) {
			if len(lit) >= 6 && strings.Contains(v, lit) {
				word := regexp.MustCompile(`(^|[^A-Za-z0-9_])` + regexp.QuoteMeta(lit) + `($|[^A-Za-z0-9_])`)
				v = word.ReplaceAllString(v, "${1}$${env."+c.secretVal[lit]+"}${2}")
			}
		}
		v = secretWord.ReplaceAllStringFunc(v, func(w string) string {
			if !looksSecret(w) {
				return w
			}
			return "${env." + c.secretName(w, world.EnvStem(sv.name)+"_SECRET") + "}"
		})
	}
	if key == "" {
		v = c.scrubStdin(sv, v)
	}
	if !fixed {
		var out strings.Builder
		last := 0
		for _, m := range append(commandSep.FindAllStringIndex(v, -1), []int{len(v), len(v)}) {
			seg := v[last:m[0]]
			out.WriteString(c.scrubFlags(sv, key, seg, clientIn(seg), statementAt(v, last)))
			out.WriteString(v[m[0]:m[1]])
			last = m[1]
		}
		return out.String()
	}
	return c.scrubFlags(sv, key, v, program, v)
}

// stdinFeed is a credential a command writes to a program's standard
// input: echo 'root:pw' | chpasswd, echo pw | docker login
// --password-stdin, chpasswd <<< 'root:pw'. arg is what is written, cmd
// and args the program it goes to.
var stdinFeed = regexp.MustCompile(`(?:(?:^|[\s;&('"])(?:echo(?:\s+-[neE]+)*|printf(?:\s+(?P<fmt>'[^']*%s[^']*'|"[^"]*%s[^"]*"))?)\s+(?P<arg>(?:` + fedWord + `)(?:[ \t]+(?:` + fedWord + `))*)\s*\|\s*(?P<sudo>` + sudo + `)(?P<cmd>[^\s|;&'"()]+)(?P<args>` + fedArgs + `))` +
	`|(?:(?:^|[\s;&('"])(?P<sudo2>` + sudo + `)(?P<cmd2>[^\s|;&'"()<]+)(?P<args2>` + fedArgs + `)<<<\s*(?P<arg2>` + fedWord + `))`)

// The parts of stdinFeed: what is written (no shell operator unquoted),
// sudo and its options, and the program's arguments (quoted words too).
const (
	fedWord = `\\"[^"\\]*\\"|'[^']*'|"[^"]*"|[^\s|;&'"()\\]+`
	sudo    = `(?:sudo\s+(?:(?:-[A-Za-z]*[ugCDhprtU]\s+[^\s|;&'"]+|--(?:user|group|close-from|chdir|host|prompt|role|type|other-user|chroot)(?:=|\s+)[^\s|;&'"]+|--?[A-Za-z-]+(?:=[^\s|;&'"]+)?)\s+)*)?`
	fedArgs = `(?:[^|;&\n'"()<]|'[^']*'|"[^"]*")*`
)

// redisAuth is an AUTH [user] PW line written to redis-cli.
var redisAuth = regexp.MustCompile(`(?i)((?:^|\\n|\n|;)\s*AUTH\s+(?:[^\s\\;]+\s+)?)([^\s\\;]+)`)

// maskFed is what a command writes to program (run with args), its
// credentials named: Redis's AUTH lines, chpasswd's user:password lines,
// or a password alone.
func maskFed(program, args, fed string, plain func(string) bool, name func(string) string) string {
	switch {
	case redisClient(program):
		return redisAuth.ReplaceAllStringFunc(fed, func(line string) string {
			sm := redisAuth.FindStringSubmatch(line)
			if plain(sm[2]) {
				return line
			}
			return sm[1] + name(sm[2])
		})
	case program == "chpasswd":
		return userPassword.ReplaceAllStringFunc(fed, func(pair string) string {
			sm := userPassword.FindStringSubmatch(pair)
			if plain(sm[3]) {
				return pair
			}
			return sm[1] + sm[2] + ":" + name(sm[3])
		})
	case stdinPassword(program, args) && !plain(fed):
		return name(fed)
	}
	return fed
}

// redisClient reports whether program is Redis's command line (or a fork's).
func redisClient(program string) bool {
	return program == "redis-cli" || program == "valkey-cli" || program == "keydb-cli"
}

// aloneFormat reports whether a printf format writes its argument alone
// on a line.
func aloneFormat(format string) bool { return format == "%s" || format == `%s\n` }

// stdinPassword reports whether program, run with args, reads a password
// alone on its standard input.
func stdinPassword(program, args string) bool {
	return strings.Contains(args, " --password-stdin ") || program == "passwd" && strings.Contains(args, " --stdin ") ||
		program == "htpasswd" && htpasswdStdin.MatchString(args)
}

// sudoStdin is sudo's -S (--stdin): its password is read from stdin.
var sudoStdin = regexp.MustCompile(`\s(?:-[A-Za-z]*S[A-Za-z]*|--stdin)\s`)

// printfAuth is a printf format that writes Redis's AUTH [user] %s.
var printfAuth = regexp.MustCompile(`(?i)(?:^|\\n|;)\s*AUTH\s+(?:\S+\s+)?%s`)

// htpasswdStdin is htpasswd's -i: the password is read from stdin.
var htpasswdStdin = regexp.MustCompile(`\s-[A-Za-z]*i[A-Za-z]*\s`)

// userPassword is a user:password line, as chpasswd reads them.
var userPassword = regexp.MustCompile(`(^|\\n|\n|\s)([^:\s\\]+):([^\s\\'"]+)`)

// scrubStdin masks the credentials a command feeds to a program that
// reads one on its standard input (stdinFeed).
func (c *converter) scrubStdin(sv *service, v string) string {
	name := func(lit string) string {
		return "${env." + c.secretName(lit, world.EnvStem(sv.name)+"_PASSWORD") + "}"
	}
	var out strings.Builder
	last := 0
	for _, m := range stdinFeed.FindAllStringSubmatchIndex(v, -1) {
		group := func(n string) (int, int) {
			i := 2 * stdinFeed.SubexpIndex(n)
			return m[i], m[i+1]
		}
		as, ae := group("arg")
		cs, ce := group("cmd")
		gs, ge := group("args")
		ss, se := group("sudo")
		if as < 0 {
			as, ae = group("arg2")
			cs, ce = group("cmd2")
			gs, ge = group("args2")
			ss, se = group("sudo2")
		}
		arg, program, args := v[as:ae], filepath.Base(v[cs:ce]), " "+v[gs:ge]+" "
		// One quoted word is read inside its quotes; several words as
		// they are.
		quote := ""
		for _, q := range []string{`\"`, "'", `"`} {
			if in, ok := strings.CutPrefix(arg, q); ok && strings.HasSuffix(in, q) && len(in) >= len(q) && !strings.ContainsAny(in[:len(in)-len(q)], `'"`) {
				quote = q
				break
			}
		}
		inner := strings.TrimSuffix(strings.TrimPrefix(arg, quote), quote)
		// $ and backticks are the shell's, except inside single quotes.
		plain := func(lit string) bool {
			return lit == "" || quote != "'" && (strings.HasPrefix(lit, "$") || strings.ContainsAny(lit, "`")) || strings.TrimSpace(stripTokens(lit)) == ""
		}
		masked := inner
		if fs, fe := group("fmt"); ss >= 0 && sudoStdin.MatchString(" "+v[ss:se]) {
			// sudo -S: what is written is sudo's password, whatever runs.
			if fs >= 0 && !aloneFormat(strings.Trim(v[fs:fe], `'"`)) {
				continue
			}
			if !plain(inner) {
				masked = name(inner)
			}
		} else if fs >= 0 {
			// printf FORMAT ARG: the line written is the format with the
			// argument in it.
			format := strings.Trim(v[fs:fe], `'"`)
			if (redisClient(program) && printfAuth.MatchString(format) || program == "chpasswd" && strings.Contains(format, ":%s") ||
				stdinPassword(program, args) && aloneFormat(format)) && !plain(inner) {
				masked = name(inner)
			}
		} else {
			masked = maskFed(program, args, inner, plain, name)
		}
		if masked == inner {
			continue
		}
		out.WriteString(v[last:as])
		out.WriteString(quote + masked + quote)
		last = ae
	}
	out.WriteString(v[last:])
	return out.String()
}

// scrubFlags masks the credentials given as flags in one command, whose
// database client (or "") is program; whole is the text it is part of (a
// rule's where is judged on it: SQL spans lines).
func (c *converter) scrubFlags(sv *service, key, v, program, whole string) string {
	return flagCredential.ReplaceAllStringFunc(v, func(s string) string {
		m := flagCredential.FindStringSubmatchIndex(s)
		for i, r := range flagRules {
			pi := 2 * flagCredential.SubexpIndex(fmt.Sprintf("pre%d", i))
			vi := 2 * flagCredential.SubexpIndex(fmt.Sprintf("val%d", i))
			if m[pi] < 0 {
				continue
			}
			pre, val := s[m[pi]:m[pi+1]], s[m[vi]:m[vi+1]]
			unq := strings.Trim(val, `'"`)
			if q, ok := strings.CutPrefix(val, `\"`); ok {
				unq = strings.TrimSuffix(q, `\"`) // quoted inside a quoted sh -c "..."
			}
			if r.where != nil && !r.where.MatchString(whole) {
				return s
			}
			// $ is the shell's, except inside single quotes.
			if key != "" && !r.inVar || unq == "" || strings.TrimSpace(stripTokens(unq)) == "" || strings.HasPrefix(unq, "$") && !strings.HasPrefix(val, "'") ||
				strings.HasPrefix(unq, "-") || plainWords[strings.ToLower(unq)] || namesWhere(unq) || r.ok != nil && !r.ok(pre, unq) || r.client != nil && !r.client(pre, program) && !passwordLike(unq) {
				return s
			}
			return pre + "${env." + c.secretName(unq, world.EnvStem(sv.name)+"_PASSWORD") + "}" + s[m[vi+1]:]
		}
		return s
	})
}

// scrubArgs keeps out a credential given as the argument after its flag
// in exec form (["redis-cli", "-a", "pw"], ["curl", "-u", "admin:pw"]):
// text scrubbed each argument alone, where the flag's value is not seen.
func (c *converter) scrubArgs(sv *service, args []string) []string {
	if len(args) == 0 {
		return args
	}
	program := clientIn(" " + filepath.Base(args[0]) + " ")
	for i := 0; i+1 < len(args); i++ {
		pair := args[i] + " " + args[i+1]
		if out, ok := strings.CutPrefix(c.scrubIn(sv, "", pair, program, true), args[i]+" "); ok {
			args[i+1] = out
		}
	}
	// A password further from what says it is one (htpasswd -b FILE USER
	// PW, redis-cli AUTH USER PW): the whole line, each argument one word
	// of it (in single quotes where the shell would read it otherwise),
	// taken only where each word is the argument it was or a credential
	// kept out in its place; the names a line not taken gave are given back.
	words := make([]string, len(args))
	for i, a := range args {
		switch {
		case a == "" || strings.ContainsFunc(a, unicode.IsSpace) || strings.Contains(a, "'"):
			return args
		case strings.ContainsAny(a, "\"$`\\<>|;&()*?[]#~!{}"):
			words[i] = "'" + a + "'"
		default:
			words[i] = a
		}
	}
	secrets, refs, secretVal := maps.Clone(c.secrets), maps.Clone(c.refs), maps.Clone(c.secretVal)
	out := strings.Split(c.scrubIn(sv, "", strings.Join(words, " "), program, true), " ")
	if len(out) == len(args) {
		kept := true
		for i := range out {
			switch {
			case out[i] == words[i]:
				out[i] = args[i]
			case strings.HasPrefix(out[i], "${env.") && strings.HasSuffix(out[i], "}"):
			default:
				kept = false
			}
		}
		if kept {
			return out
		}
	}
	c.secrets, c.refs, c.secretVal = secrets, refs, secretVal
	return args
}

var localURL = regexp.MustCompile(`https?://(?:localhost|127\.0\.0\.1|0\.0\.0\.0|\[::1\])(?::(\d+))?(/[^\s'"]*)?`)

// localPort finds a port on this host in a health command: localhost:8080,
// -p 5432, or a port number alone as an argument.
var localPort = regexp.MustCompile(`(?:localhost|127\.0\.0\.1|0\.0\.0\.0)[: ](\d{1,5})\b`)

// convertHealth carries a healthcheck. An HTTP check against the service's
// own port becomes health.http; one against its other ports, or a command,
// is rewritten to this world's ports; one against a port the service does
// not have is dropped with a note. It ran in the container, so a command
// check is marked.
func (c *converter) convertHealth(sv *service) {
	h := sv.cfg.HealthCheck
	if h == nil || h.Disable || len(h.Test) == 0 || h.Test[0] == "NONE" {
		return
	}
	var cmdline string
	rawTest := sv.rawHealthTest()
	switch {
	case len(rawTest) > 0 && rawTest[0] == "CMD":
		args := make([]string, len(rawTest)-1)
		for i, a := range rawTest[1:] {
			args[i] = c.text(sv, a, false)
		}
		cmdline = shellJoin(c.scrubArgs(sv, args))
	case len(rawTest) > 0:
		cmdline = c.text(sv, strings.Join(rawTest[1:], " "), false)
	default:
		return
	}
	var opts []string
	note := ""
	if m := localURL.FindStringSubmatch(cmdline); m != nil && sv.main != nil && (m[1] == "" && sv.main.target == 80 || m[1] == strconv.FormatUint(uint64(sv.main.target), 10)) {
		u, err := url.Parse(m[0])
		path := "/"
		if err == nil && u.RequestURI() != "" {
			path = u.RequestURI()
		}
		opts = append(opts, "http = "+tomlString(path))
		note = "from the compose healthcheck, on this service's own port"
	} else {
		missing := ""
		rewritten := localPort.ReplaceAllStringFunc(cmdline, func(s string) string {
			m := localPort.FindStringSubmatch(s)
			if tok, ok := sv.portToken("self", m[1]); ok {
				return strings.TrimSuffix(s, m[1]) + tok
			}
			missing = m[1]
			return s
		})
		rewritten = c.ownPorts(sv, rewritten)
		if missing != "" || (strings.Contains(rewritten, "${self.") && !sv.hasPort()) {
			c.leave(sv, "compose checked its health on port "+missing+", which it does not publish here; the check was dropped: add health = { ... } against ${self.port}")
			return
		}
		opts = append(opts, "cmd = "+tomlString(rewritten))
		note = "guessed: the compose healthcheck ran in the container; check it works on this machine"
		c.guessed = append(c.guessed, sv.name+": health command carried from the container")
	}
	for _, d := range []struct {
		k string
		v *time.Duration
	}{{"interval", durPtr(h.Interval)}, {"timeout", durPtr(h.Timeout)}} {
		if d.v != nil && *d.v > 0 {
			opts = append(opts, d.k+" = "+tomlString(d.v.String()))
		}
	}
	if deadline, why := startDeadline(h); deadline != binkyStartPeriod {
		opts = append(opts, "start_period = "+tomlString(deadline.String()))
		note += "; start_period: compose gave up after " + why
	}
	if h.Retries != nil && *h.Retries <= math.MaxInt32 {
		opts = append(opts, fmt.Sprintf("retries = %d", *h.Retries))
	}
	c.add(sv, "health", "{ "+strings.Join(opts, ", ")+" }", note)
}

// binkyStartPeriod is binky's own start_period when a config gives none.
const binkyStartPeriod = 60 * time.Second

// startDeadline is how long compose gives a service to become healthy
// before it calls it unhealthy (and fails what depends on it): its
// start_period, in which failures do not count, then retries failures an
// interval apart (compose's defaults: 0, 3 and 30s). binky's start_period
// is that deadline itself; carried as is, compose's grace period of 5s
// failed a service that compose would wait for two minutes.
func startDeadline(h *types.HealthCheckConfig) (time.Duration, string) {
	grace, interval, retries := time.Duration(0), 30*time.Second, uint64(3)
	if d := durPtr(h.StartPeriod); d != nil && *d > 0 {
		grace = *d
	}
	if d := durPtr(h.Interval); d != nil && *d > 0 {
		interval = *d
	}
	if h.Retries != nil && *h.Retries > 0 {
		retries = min(*h.Retries, 10000) // binky's own bound on retries
	}
	deadline := grace + time.Duration(retries)*interval
	why := fmt.Sprintf("%d failed probes %s apart", retries, interval)
	if grace > 0 {
		why = fmt.Sprintf("%s of grace, then %s", grace, why)
	}
	return deadline, why
}

func durPtr[T ~int64](d *T) *time.Duration {
	if d == nil {
		return nil
	}
	v := time.Duration(*d)
	return &v
}

// rawHealthTest is the healthcheck test as written (not interpolated), in
// the list form: CMD or CMD-SHELL first.
func (sv *service) rawHealthTest() []string {
	h, _ := sv.raw["healthcheck"].(map[string]any)
	switch t := h["test"].(type) {
	case string:
		return []string{"CMD-SHELL", t}
	case []any:
		out := make([]string, len(t))
		for i, x := range t {
			out[i] = fmt.Sprint(x)
		}
		return out
	}
	return nil
}

func containsService(list []*service, s *service) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

package compose

import (
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/git-binky/git-binky/adapters"
	"github.com/git-binky/git-binky/world"
)

// maxPorts bounds the ports one service gets: a compose range of a
// thousand UDP ports (media servers) is not a thousand binky ports.
const maxPorts = 16

// reserved are token namespaces of binky.toml: a service of that name
// could not be referred to (${env.url} means the variable "url").
var reserved = map[string]bool{"env": true, "self": true, "worktree": true, "project": true}

type cport struct {
	target     uint32
	discovered bool // not published: another service reaches it there
	udp        bool
	name       string // "" for the main port
}

type service struct {
	compose, name string
	cfg           types.ServiceConfig
	raw           map[string]any
	kind          *adapters.Kind
	image         string
	ports         []cport
	main          *cport
	moreRanges    int // ports left out past maxPorts
	needsPort     bool
	oneshot       bool     // a dependent waits for it to finish successfully
	deps          []string // compose names
	slices        []*service
	prefixes      map[string]*service // env key prefix → the slice it addresses
	lines         []line
	env           []line
}

type hostPort struct {
	sv     *service
	target string
}

type line struct {
	key, value, comment string
}

type converter struct {
	src       *source
	project   string
	services  []*service
	byCompose map[string]*service
	byHost    map[string]*service
	// published is what localhost:PORT reached from the machine (a
	// browser, an app run outside compose): the service that published
	// host port PORT, and the container port behind it.
	published map[string]hostPort
	secrets   map[string]bool   // env names holding credentials
	refs      map[string]bool   // every ${env.NAME} written
	secretVal map[string]string // literal credential → the env name it became
	named     map[string]bool   // env names a note asks for, not a ${env.NAME} (compose secrets)
	mapped    []string
	guessed   []string
	left      []string
	// bucketJobs are the compose services left out as bucket jobs
	// (dropBucketJobs), with the bucket each made; dropped says so.
	bucketJobs map[string]string
	dropped    []string
}

func newConverter(s *source) *converter {
	c := &converter{src: s, byCompose: map[string]*service{}, byHost: map[string]*service{}, published: map[string]hostPort{},
		secrets: map[string]bool{}, refs: map[string]bool{}, secretVal: map[string]string{}, named: map[string]bool{}}
	c.project = label(s.project.Name)
	names := make([]string, 0, len(s.project.Services))
	for n := range s.project.Services {
		names = append(names, n)
	}
	sort.Strings(names)
	taken := map[string]bool{}
	for _, n := range names {
		cfg := s.project.Services[n]
		raw, _ := s.raw[n].(map[string]any)
		sv := &service{compose: n, cfg: cfg, raw: raw, image: cfg.Image, prefixes: map[string]*service{}}
		sv.name = uniqueName(label(n), taken)
		if k, ok := adapters.ForImage(cfg.Image); ok {
			sv.kind = &k
		}
		c.services = append(c.services, sv)
		c.byCompose[n] = sv
	}
	for _, sv := range c.services {
		for _, h := range hostsOf(sv) {
			if _, dup := c.byHost[h]; !dup {
				c.byHost[h] = sv
			}
		}
		for _, l := range sv.cfg.Links {
			name, alias, ok := strings.Cut(l, ":")
			if t := c.byCompose[name]; t != nil {
				c.byHost[strings.ToLower(name)] = t
				if ok {
					c.byHost[strings.ToLower(alias)] = t
				}
			}
		}
	}
	c.dropBucketJobs()
	for _, sv := range c.services {
		sv.readPorts()
		for _, p := range sv.cfg.Ports {
			if _, taken := c.published[p.Published]; isPort(p.Published) && !strings.EqualFold(p.Protocol, "udp") && !taken {
				c.published[p.Published] = hostPort{sv, strconv.FormatUint(uint64(p.Target), 10)}
			}
		}
	}
	c.discoverPorts()
	for _, sv := range c.services {
		for _, d := range slices.Sorted(maps.Keys(sv.cfg.DependsOn)) {
			if job, ok := c.bucketJobs[d]; ok {
				c.note(sv, fmt.Sprintf("compose waited for %s, which made the bucket %s; the s3 slice makes each world's bucket before any process starts", d, job))
				continue
			}
			if t := c.byCompose[d]; t != nil {
				sv.deps = append(sv.deps, d)
				if t.kind != nil {
					sv.slices = append(sv.slices, t)
				} else if sv.cfg.DependsOn[d].Condition == types.ServiceConditionCompletedSuccessfully {
					t.oneshot = true
				}
			}
		}
		if _, ok := sv.rawEnv()["PORT"]; ok && sv.kind == nil {
			sv.needsPort = true
		}
	}
	for _, sv := range c.services {
		c.convertService(sv)
	}
	return c
}

func hostsOf(sv *service) []string {
	hs := []string{strings.ToLower(sv.compose)}
	if sv.cfg.ContainerName != "" {
		hs = append(hs, strings.ToLower(sv.cfg.ContainerName))
	}
	if sv.cfg.Hostname != "" {
		hs = append(hs, strings.ToLower(sv.cfg.Hostname))
	}
	for _, n := range slices.Sorted(maps.Keys(sv.cfg.Networks)) {
		if nc := sv.cfg.Networks[n]; nc != nil {
			for _, a := range nc.Aliases {
				hs = append(hs, strings.ToLower(a))
			}
		}
	}
	return hs
}

// uniqueName makes name distinct from those taken: Web_App and web-app
// both fold to web-app, and must stay two services.
func uniqueName(name string, taken map[string]bool) string {
	if reserved[name] {
		name += "-svc"
	}
	out := name
	for i := 2; taken[out]; i++ {
		suffix := "-" + strconv.Itoa(i)
		out = cut(name, 63-len(suffix)) + suffix
	}
	taken[out] = true
	return out
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.TrimRight(s[:n], "-")
}

// label makes a name fit binky's: world.DNSLabel (lowercase letters,
// digits and '-', at most 63 bytes, a hash when cut), and "app" for a name
// with no letter or digit at all.
func label(s string) string {
	if !strings.ContainsFunc(strings.ToLower(s), func(r rune) bool { return r >= 'a' && r <= 'z' || r >= '0' && r <= '9' }) {
		return "app"
	}
	return world.DNSLabel(s)
}

// readPorts collects every container port the service publishes or
// exposes: the first TCP one is its main port (url), the others are named
// ports; UDP ports are ports, never a URL.
func (sv *service) readPorts() {
	seen := map[string]bool{}
	add := func(target uint32, proto string) {
		udp := strings.EqualFold(proto, "udp")
		id := fmt.Sprint(target, udp)
		if target == 0 || seen[id] {
			return
		}
		seen[id] = true
		if len(sv.ports) >= maxPorts {
			sv.moreRanges++
			return
		}
		sv.ports = append(sv.ports, cport{target: target, udp: udp})
	}
	for _, p := range sv.cfg.Ports {
		add(p.Target, p.Protocol)
	}
	for _, e := range sv.cfg.Expose {
		spec, proto, _ := strings.Cut(e, "/")
		lo, hi, isRange := strings.Cut(spec, "-")
		a, err1 := strconv.ParseUint(lo, 10, 16)
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.ParseUint(hi, 10, 16)
		}
		if err1 != nil || err2 != nil {
			continue
		}
		for p := a; p <= b && p-a <= maxPorts*4; p++ {
			add(uint32(p), proto)
		}
	}
	sv.choosePorts()
}

// webPorts are the container ports a web server usually has: when a
// service publishes DNS or SMTP too, its URL is the web one.
var webPorts = map[uint32]bool{80: true, 443: true, 3000: true, 4000: true, 4200: true, 5000: true, 5173: true,
	8000: true, 8080: true, 8081: true, 8443: true, 8888: true, 9000: true}

// choosePorts picks the main port and names the others.
func (sv *service) choosePorts() {
	sv.main = nil
	for i := range sv.ports {
		if !sv.ports[i].udp && webPorts[sv.ports[i].target] && sv.main == nil {
			sv.main = &sv.ports[i]
		}
	}
	for i := range sv.ports {
		if !sv.ports[i].udp && sv.main == nil {
			sv.main = &sv.ports[i]
		}
	}
	for i := range sv.ports {
		sv.ports[i].name = ""
		p := &sv.ports[i]
		if p == sv.main {
			continue
		}
		p.name = fmt.Sprintf("p%d", p.target)
		if p.udp {
			p.name += "-udp"
		}
	}
}

func (sv *service) hasPort() bool { return len(sv.ports) > 0 || sv.needsPort }

// portToken is the token for the service's container port target, if it
// has that port.
func (sv *service) portToken(name string, target string) (string, bool) {
	for _, p := range sv.ports {
		if strconv.FormatUint(uint64(p.target), 10) == target {
			if p.name == "" {
				return "${" + name + ".port}", true
			}
			return "${" + name + ".ports." + p.name + "}", true
		}
	}
	return "", false
}

func (sv *service) rawEnv() map[string]any {
	m := map[string]any{}
	switch e := sv.raw["environment"].(type) {
	case map[string]any:
		for k, v := range e {
			m[k] = v
		}
	case []any:
		for _, it := range e {
			k, v, ok := strings.Cut(fmt.Sprint(it), "=")
			if ok {
				m[k] = v
			} else {
				m[k] = nil
			}
		}
	}
	return m
}

func (c *converter) add(sv *service, key, value, comment string) {
	sv.lines = append(sv.lines, line{key: key, value: value, comment: comment})
}

func (c *converter) note(sv *service, comment string) {
	sv.lines = append(sv.lines, line{comment: comment})
}

// guess and leave write a marked note in the file and the summary.
func (c *converter) guess(sv *service, what string) {
	c.note(sv, "guessed: "+what)
	c.guessed = append(c.guessed, sv.name+": "+what)
}

func (c *converter) leave(sv *service, what string) {
	c.note(sv, "left to you: "+what)
	c.left = append(c.left, sv.name+": "+what)
}

// handled are the compose keys a process service's conversion reads.
var handled = map[string]bool{"image": true, "build": true, "command": true, "entrypoint": true, "ports": true,
	"expose": true, "environment": true, "env_file": true, "depends_on": true, "healthcheck": true,
	"profiles": true, "restart": true, "stop_grace_period": true, "stop_signal": true, "secrets": true,
	"extends": true, "container_name": true, "hostname": true, "links": true}

// mcBucket finds a MinIO client's "mc mb [flags] alias/bucket" and the
// bucket it names.
var mcBucket = regexp.MustCompile(`\bmc\s+mb\s+(?:-\S+\s+)*["']?[^\s/"';]+/([^\s/"';]+)`)

// shellSeparators split a script into its commands.
var shellSeparators = regexp.MustCompile(`;|&&|\|\||\n|\|`)

// shellWords lead a command without being it: a shell and its flags, a
// loop's or a test's keywords.
var shellWords = map[string]bool{"": true, "/bin/sh": true, "sh": true, "/bin/bash": true, "bash": true, "-c": true, "-ec": true, "-e": true,
	"until": true, "while": true, "do": true, "then": true, "!": true}

// onlyBucketWork reports whether a job's script does nothing but reach an
// S3 server with mc and make buckets there: each command of it is an mc
// alias, config, mb, ready or ls, or shell scaffolding (a shell, exit,
// sleep, echo, a wait loop). An upload, a policy, anything else: false.
func onlyBucketWork(script string) bool {
	for _, cmd := range shellSeparators.Split(script, -1) {
		f := strings.Fields(cmd)
		for i := range f {
			f[i] = strings.Trim(f[i], `"'()`)
		}
		for len(f) > 0 && shellWords[f[0]] {
			f = f[1:]
		}
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "mc", "/usr/bin/mc":
			if len(f) < 2 || !slices.Contains([]string{"alias", "config", "mb", "ready", "ls"}, f[1]) {
				return false
			}
		case "exit", "sleep", "echo", "true", "done", "fi", "set", "":
		default:
			return false
		}
	}
	return true
}

// dropBucketJobs leaves out the compose services that only make a bucket
// on the S3 server init turns into a slice (a minio/mc container running
// "mc alias set ...; mc mb local/uploads"): the slice makes each world's
// bucket, and the job would log into the shared server with the
// container's root credentials. A job that makes more than one bucket, or
// runs anything else (a policy, an upload), stays, marked as left to you.
func (c *converter) dropBucketJobs() {
	c.bucketJobs = map[string]string{}
	s3 := false
	for _, sv := range c.services {
		s3 = s3 || sv.kind != nil && sv.kind.Name == "s3"
	}
	if !s3 {
		return
	}
	kept := c.services[:0]
	for _, sv := range c.services {
		text := strings.Join(append(append([]string{}, sv.cfg.Entrypoint...), sv.cfg.Command...), " ")
		buckets := mcBucket.FindAllStringSubmatch(text, -1)
		if sv.kind != nil || len(buckets) == 0 {
			kept = append(kept, sv)
			continue
		}
		if !onlyBucketWork(text) || len(buckets) > 1 {
			c.leave(sv, "it makes buckets (or more) on the S3 server with the container's root credentials; each world's s3 slice has one bucket of its own (${<slice>.bucket}) and its own keys: rewrite it to use them, or drop it")
			kept = append(kept, sv)
			continue
		}
		c.bucketJobs[sv.compose] = buckets[0][1]
		msg := fmt.Sprintf("%s: left out; it made the bucket %s with mc, and the s3 slice makes each world's own bucket (its name is the slice's bucket field)", sv.compose, buckets[0][1])
		c.dropped = append(c.dropped, msg)
		delete(c.byCompose, sv.compose)
	}
	c.services = kept
}

func (c *converter) convertService(sv *service) {
	if sv.compose != sv.name {
		c.note(sv, "compose name: "+sv.compose)
	}
	if sv.kind != nil {
		c.convertSlice(sv)
		return
	}
	c.convertCmd(sv)
	if b := sv.cfg.Build; b != nil && b.Context != "" && b.Context != "." && !strings.Contains(b.Context, "://") {
		c.add(sv, "cwd", tomlString(strings.TrimPrefix(filepath.ToSlash(filepath.Clean(b.Context)), "./")), "compose built it from this folder")
	}
	if sv.oneshot {
		// A migration: binky's dependents wait for its exit 0 as compose's
		// did, and it is neither restarted, probed nor reached.
		c.add(sv, "oneshot", "true", "compose's dependents waited for it to finish successfully")
		if len(sv.ports) > 0 {
			c.leave(sv, "compose published its ports, but it runs to completion: a oneshot has none")
		}
	} else {
		c.convertPorts(sv)
	}
	if len(sv.deps) > 0 {
		var names []string
		var waits []string
		for _, d := range sv.deps {
			names = append(names, c.byCompose[d].name)
			if cond := sv.cfg.DependsOn[d].Condition; cond == types.ServiceConditionCompletedSuccessfully && c.byCompose[d].kind != nil {
				waits = append(waits, d)
			}
		}
		c.add(sv, "depends_on", tomlList(names), "")
		if len(waits) > 0 {
			c.guess(sv, "compose waited for "+strings.Join(waits, ", ")+" to finish successfully; binky starts a service once its dependencies are healthy")
		}
	}
	c.convertEnvFile(sv)
	if !sv.oneshot {
		c.convertHealth(sv)
	}
	c.convertRestart(sv)
	for _, sec := range sv.cfg.Secrets {
		c.leave(sv, c.secretNote(sec.Source, sec.Target))
	}
	if w := sv.cfg.WorkingDir; w != "" {
		c.guess(sv, "compose ran it in the container folder "+commentText(w)+"; binky runs it in the worktree (or cwd)")
	}
	var dropped []string
	for _, k := range slices.Sorted(maps.Keys(sv.raw)) {
		if handled[k] || strings.HasPrefix(k, "x-") || k == "working_dir" {
			continue
		}
		if k == "networks" && onlyDefaultNetwork(sv.raw[k]) {
			continue
		}
		dropped = append(dropped, k)
	}
	if len(dropped) > 0 {
		c.note(sv, "not carried (binky runs a process on this machine, not a container): "+strings.Join(dropped, ", "))
	}
	c.convertEnv(sv)
	if sv.oneshot {
		c.mapped = append(c.mapped, sv.name+": a oneshot process (it runs to completion before what depends on it starts)")
	} else {
		c.mapped = append(c.mapped, fmt.Sprintf("%s: a process%s", sv.name, portSummary(sv)))
	}
}

func portSummary(sv *service) string {
	switch {
	case sv.main != nil:
		return " on url " + sv.name
	case sv.hasPort():
		return " with ports"
	}
	return ""
}

func onlyDefaultNetwork(v any) bool {
	switch n := v.(type) {
	case map[string]any:
		if len(n) == 1 {
			_, ok := n["default"]
			return ok
		}
	case []any:
		return len(n) == 1 && fmt.Sprint(n[0]) == "default"
	}
	return false
}

// convertSlice writes an adapter service: the container is replaced by a
// slice of one shared server, so what configured the container is noted,
// not carried.
func (c *converter) convertSlice(sv *service) {
	k := sv.kind
	what := k.Slice
	if what == "" {
		what = "a slice"
	}
	c.add(sv, "adapter", tomlString(k.Name), fmt.Sprintf("replaces the %s container: %s of one shared server, private to each worktree", commentText(sv.image), what))
	if k.Server == nil {
		name := world.EnvStem(sv.name) + "_ADMIN_URL"
		c.add(sv, "admin_url", tomlString("${env."+name+"}"), fmt.Sprintf("binky cannot run a %s server itself: point it at one (admin credentials)", k.Name))
		c.secrets[name] = true
		c.refs[name] = true
		c.left = append(c.left, fmt.Sprintf("%s: set %s to the admin URL of a %s server", sv.name, name, k.Name))
	} else {
		c.note(sv, "no admin_url: binky runs one shared server for the machine; set admin_url = \"${env.NAME}\" to use yours")
	}
	var replaced []string
	for _, key := range slices.Sorted(maps.Keys(sv.raw)) {
		if key != "image" && !strings.HasPrefix(key, "x-") && !(key == "networks" && onlyDefaultNetwork(sv.raw[key])) {
			replaced = append(replaced, key)
		}
	}
	if len(replaced) > 0 {
		verb := " are"
		if len(replaced) == 1 {
			verb = " is"
		}
		c.note(sv, "the slice has its own address, user and password, so the container's "+strings.Join(replaced, ", ")+verb+" not needed")
	}
	if env := sv.rawEnv(); len(env) > 0 {
		c.note(sv, "its environment ("+strings.Join(slices.Sorted(maps.Keys(env)), ", ")+") configured the container; dependents now read this slice's fields")
	}
	if k.Name == "redis" {
		// The ACL user reaches its prefix only: an app written for a Redis
		// of its own fails at its first unprefixed key (a real app's queue).
		c.leave(sv, fmt.Sprintf("every key the app writes must start with ${%s.prefix} (%s_PREFIX in its environment), or Redis refuses it; a client that runs Lua or reads INFO (BullMQ, Sidekiq) also needs options = { allow = [\"scripts\", \"info\"] } here (docs/isolation.md)",
			sv.name, world.EnvStem(sv.name)))
	}
	c.mapped = append(c.mapped, fmt.Sprintf("%s: a %s slice (was the %s container)", sv.name, k.Name, commentText(sv.image)))
}

func (c *converter) secretNote(source, target string) string {
	where := "/run/secrets/" + source
	if target != "" {
		where = target
		if !strings.HasPrefix(where, "/") {
			where = "/run/secrets/" + target
		}
	}
	from := ""
	if sec, ok := c.src.project.Secrets[source]; ok {
		switch {
		case sec.File != "":
			from = " from the file " + sec.File
		case sec.Environment != "" && validEnvName(sec.Environment):
			from = " from the variable " + sec.Environment
			c.refs[sec.Environment] = true
			c.secrets[sec.Environment] = true
			c.named[sec.Environment] = true
		case sec.Environment != "":
			// Not a name a shell or binky can read: a compose file could
			// end a comment line with it and write TOML of its own.
			from = " from a variable whose name is not one (left to you)"
			c.left = append(c.left, fmt.Sprintf("the secret %s names the variable %q, which is not a variable name: give it one", commentText(source), sec.Environment))
		}
	}
	return fmt.Sprintf("compose mounted the secret %s%s at %s; binky mounts nothing: have the app read it from the file or the environment", commentText(source), commentText(from), commentText(where))
}

// convertCmd writes cmd. A list is exec form (each argument quoted); a
// string is a command line. An image's command is arguments to its
// entrypoint, which binky does not have: that is marked, never passed off
// as the command.
func (c *converter) convertCmd(sv *service) {
	entry, hasEntry := sv.raw["entrypoint"]
	command, hasCmd := sv.raw["command"]
	var parts []string
	if hasEntry {
		parts = append(parts, c.cmdText(sv, entry))
	}
	if hasCmd {
		parts = append(parts, c.cmdText(sv, command))
	}
	joined := strings.TrimSpace(strings.Join(parts, " "))
	if loopback := loopbackCmd(joined); loopback != joined {
		// A container must listen on every interface to be reached; a
		// world's process must not (check warns of it): loopback is where
		// binky's proxy and direct URLs reach it.
		c.guess(sv, "compose's container listened on every interface; a world listens on 127.0.0.1 only")
		joined = loopback
	}
	build := sv.cfg.Build != nil
	placeholder := tomlString("echo 'binky.toml: write the command that runs " + sv.name + "' >&2; exit 1")
	switch {
	case joined == "" && build:
		c.leave(sv, fmt.Sprintf("compose builds %s from %s; binky runs processes, not images: write the command that runs it", sv.compose, commentText(sv.cfg.Build.Context)))
		c.add(sv, "cmd", placeholder, "")
	case joined == "":
		c.leave(sv, fmt.Sprintf("compose runs the image %s; binky runs processes: write the command that runs it here (or drop the service)", commentText(sv.image)))
		c.add(sv, "cmd", placeholder, "")
	case !hasEntry && !build && strings.HasPrefix(joined, "-"):
		c.leave(sv, fmt.Sprintf("compose passed the image %s these arguments for its entrypoint: %s; write the program that takes them", commentText(sv.image), commentText(joined)))
		c.add(sv, "cmd", placeholder, "")
	case !hasEntry && !build:
		c.guess(sv, fmt.Sprintf("this is the command compose gave the image %s (after the image's entrypoint, if it has one): check it runs on this machine", commentText(sv.image)))
		c.add(sv, "cmd", tomlString(joined), "")
	default:
		what := "the image " + commentText(sv.image)
		if build {
			what = "the image built from " + commentText(sv.cfg.Build.Context)
		}
		c.guess(sv, "compose ran this command in "+what+": check it runs on this machine")
		c.add(sv, "cmd", tomlString(joined), "")
	}
}

// anyAddr finds the every-interface addresses a command may listen on:
// 0.0.0.0, [::] and a bare ::. Whether one is a whole address is decided
// by its neighbours (wholeAddr), which a Go regexp cannot look behind.
var anyAddr = regexp.MustCompile(`0\.0\.0\.0|\[::\]|::`)

// loopbackCmd rewrites a command's every-interface listen addresses to
// 127.0.0.1. The IPv6 ones become 127.0.0.1 too, not [::1]: binky's health
// probe and proxy dial 127.0.0.1, and a process listening on [::1] alone
// would never be reached there, so its world would never be healthy.
func loopbackCmd(cmd string) string {
	var b strings.Builder
	last := 0
	for _, m := range anyAddr.FindAllStringIndex(cmd, -1) {
		if !wholeAddr(cmd, m[0], m[1]) {
			continue
		}
		b.WriteString(cmd[last:m[0]])
		b.WriteString("127.0.0.1")
		last = m[1]
	}
	b.WriteString(cmd[last:])
	return b.String()
}

// wholeAddr reports whether cmd[i:j] is an address on its own, not part of
// another: 10.0.0.0/8 and 0.0.0.0/0 are networks, ::1 and fe80:: other
// addresses, a[::] a Python slice.
func wholeAddr(cmd string, i, j int) bool {
	var before, after byte
	if i > 0 {
		before = cmd[i-1]
	}
	if j < len(cmd) {
		after = cmd[j]
	}
	switch cmd[i:j] {
	case "0.0.0.0":
		return !isDigit(before) && before != '.' && !isDigit(after) && after != '.' && after != '/'
	case "[::]":
		// [::]:8000, http://[::]:8000, --bind=[::]
		return strings.IndexByte("\x00 \t\n='\",/", before) >= 0 && strings.IndexByte("\x00 \t\n:'\",/", after) >= 0
	default: // "::" alone: --host ::, HOST=::
		return strings.IndexByte("\x00 \t\n='\",", before) >= 0 && strings.IndexByte("\x00 \t\n'\",", after) >= 0
	}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// cmdText converts a compose command or entrypoint to a command line.
func (c *converter) cmdText(sv *service, v any) string {
	switch x := v.(type) {
	case string:
		return c.text(sv, x, true)
	case []any:
		args := make([]string, len(x))
		for i, a := range x {
			args[i] = c.text(sv, fmt.Sprint(a), true)
		}
		return shellJoin(c.scrubArgs(sv, args))
	}
	return ""
}

func (c *converter) convertPorts(sv *service) {
	var names, udp []string
	for _, p := range sv.ports {
		if p.name != "" {
			names = append(names, p.name)
		}
		if p.udp {
			udp = append(udp, strconv.FormatUint(uint64(p.target), 10))
		}
	}
	if sv.main != nil || (sv.needsPort && len(sv.ports) == 0) {
		why := "its process reads PORT"
		if sv.main != nil {
			why = fmt.Sprintf("compose published container port %d", sv.main.target)
			if sv.main.discovered {
				why = fmt.Sprintf("compose never published it, but its container listens on port %d", sv.main.target)
			}
		}
		c.add(sv, "url", tomlString(sv.name), why+"; the process must listen on ${self.port} ($PORT)")
	}
	if len(names) > 0 {
		c.add(sv, "ports", tomlList(names), "the container's other ports; each is ${self.ports.NAME}")
	}
	if len(udp) > 0 {
		c.note(sv, "UDP "+strings.Join(udp, ", ")+": a port number for the process, not an HTTP URL")
	}
	if sv.moreRanges > 0 {
		c.leave(sv, fmt.Sprintf("compose published %d more ports (a range); binky gave the first %d a port each", sv.moreRanges, maxPorts))
	}
}

func (c *converter) convertEnvFile(sv *service) {
	files := sv.cfg.EnvFiles
	if len(files) == 0 {
		return
	}
	c.add(sv, "env_file", tomlString(filepath.ToSlash(files[0].Path)), "")
	if len(files) > 1 {
		var rest []string
		for _, f := range files[1:] {
			rest = append(rest, f.Path)
		}
		c.leave(sv, "compose read more env files ("+commentText(strings.Join(rest, ", "))+"); binky reads one: merge them into "+commentText(files[0].Path))
	}
	if !bool(files[0].Required) {
		c.leave(sv, "compose treated "+commentText(files[0].Path)+" as optional; binky needs it to exist")
	}
}

func (c *converter) convertRestart(sv *service) {
	if sv.cfg.StopGracePeriod != nil {
		c.add(sv, "stop_timeout", tomlString(time.Duration(*sv.cfg.StopGracePeriod).String()), "compose stop_grace_period")
	}
	if sig := sv.cfg.StopSignal; sig != "" && !strings.EqualFold(strings.TrimPrefix(strings.ToUpper(sig), "SIG"), "TERM") {
		c.leave(sv, "compose stop_signal "+commentText(sig)+": binky sends SIGTERM, then SIGKILL after stop_timeout: make it exit on SIGTERM")
	}
	switch r := sv.cfg.Restart; {
	case sv.oneshot:
		if r != "" && r != "no" {
			c.note(sv, "compose restart "+commentText(r)+": a oneshot is never restarted; one that fails fails the up, and the next up runs it again")
		}
	case r == "":
	case r == "no" || r == "always":
		c.add(sv, "restart", tomlString(r), "")
	case r == "unless-stopped":
		c.add(sv, "restart", tomlString("always"), "compose unless-stopped: binky's down stops it either way")
	case strings.HasPrefix(r, "on-failure"):
		c.add(sv, "restart", tomlString("on-failure"), "")
		if r != "on-failure" {
			c.note(sv, "compose restart "+commentText(r)+": binky retries with backoff, without a count")
		}
	default:
		c.leave(sv, "compose restart "+commentText(r)+" has no binky equivalent (on-failure, always, no)")
	}
}

// envToken is a ${env.NAME} the file reads, without a default.
var envToken = regexp.MustCompile(`\$\{env\.([A-Za-z_][A-Za-z0-9_]*)\}`)

// render writes the whole file.
func (c *converter) render() string {
	var b strings.Builder
	srcs := make([]string, len(c.src.files))
	for i, f := range c.src.files {
		srcs[i] = filepath.Base(f)
	}
	fmt.Fprintf(&b, "# Written by `git binky init` from %s.\n", commentText(strings.Join(srcs, " + ")))
	b.WriteString("# Read it through: \"guessed:\" marks what init inferred, \"left to you:\" what it could not do.\n")
	b.WriteString("# `git binky check` validates it.\n")
	for _, m := range c.src.carried {
		fmt.Fprintf(&b, "# %s\n", commentText(m))
		c.mapped = append(c.mapped, m)
	}
	for _, m := range c.dropped {
		fmt.Fprintf(&b, "# %s\n", commentText(m))
		c.mapped = append(c.mapped, m)
	}
	p := c.src.project
	var top []string
	networks := len(p.Networks)
	if _, ok := p.Networks["default"]; ok {
		networks-- // compose's own, not the file's
	}
	for _, k := range []struct {
		name string
		n    int
	}{{"volumes", len(p.Volumes)}, {"networks", networks}, {"configs", len(p.Configs)}} {
		if k.n > 0 {
			top = append(top, k.name)
		}
	}
	if len(top) > 0 {
		fmt.Fprintf(&b, "# not carried (containers only): the top-level %s\n", strings.Join(top, ", "))
	}
	for _, name := range slices.Sorted(maps.Keys(p.Secrets)) {
		used := false
		for _, sv := range c.services {
			for _, s := range sv.cfg.Secrets {
				used = used || s.Source == name
			}
		}
		if !used {
			note := c.secretNote(name, "")
			fmt.Fprintf(&b, "# left to you: %s\n", commentText(note))
			c.left = append(c.left, note)
		}
	}
	fmt.Fprintf(&b, "\n[project]\nname = %s\n", tomlString(c.project))
	if len(c.src.dotenv) > 0 {
		b.WriteString("env_file = \".env\"   # compose read .env for ${VAR}; here ${env.VAR} reads it at run time\n")
		if !c.src.dotenvTracked {
			b.WriteString("# left to you: .env must exist in every worktree (it is not committed): copy it there, or export its variables and drop env_file\n")
			c.left = append(c.left, ".env must exist in every worktree (env_file = \".env\"): copy it there, or export its variables and drop env_file")
		}
	}
	groups := map[string][]string{}
	var plain []string
	anyProfile := false
	for _, sv := range c.services {
		b.WriteString("\n")
		fmt.Fprintf(&b, "[services.%s]\n", tomlKey(sv.name))
		for _, l := range sv.lines {
			writeLine(&b, l)
		}
		if len(sv.env) > 0 {
			fmt.Fprintf(&b, "[services.%s.env]\n", tomlKey(sv.name))
			for _, l := range sv.env {
				writeLine(&b, l)
			}
		}
		if len(sv.cfg.Profiles) == 0 {
			plain = append(plain, sv.name)
		}
		for _, pr := range sv.cfg.Profiles {
			anyProfile = true
			g := label(pr)
			groups[g] = append(groups[g], sv.name)
		}
	}
	if anyProfile {
		groups["default"] = append(groups["default"], plain...)
		b.WriteString("\n# compose profiles: `git binky up --group NAME` starts one (with what it depends on);\n")
		b.WriteString("# a plain `git binky up` starts the default group: the services compose starts with no profile.\n[groups]\n")
		for _, g := range slices.Sorted(maps.Keys(groups)) {
			fmt.Fprintf(&b, "%s = %s\n", tomlKey(g), tomlList(dedupe(groups[g])))
		}
		c.mapped = append(c.mapped, fmt.Sprintf("profiles became groups (%s); the default group is what a plain up starts", strings.Join(slices.Sorted(maps.Keys(groups)), ", ")))
	}
	// Only what the file reads: a variable the conversion first wrote as
	// ${env.NAME} may since have become a slice's field (APP_DB_PASSWORD,
	// RABBIT_PASS), and the summary asked the user to set it for nothing.
	read := map[string]bool{}
	for _, m := range envToken.FindAllStringSubmatch(b.String(), -1) {
		read[m[1]] = true
	}
	maps.DeleteFunc(c.secrets, func(n string, _ bool) bool { return !read[n] && !c.named[n] })
	maps.DeleteFunc(c.refs, func(n string, _ bool) bool { return !read[n] && !c.named[n] })
	if len(c.secrets) > 0 {
		b.WriteString("\n# Credentials kept out of this file, each written ${env.NAME}: set them in your environment\n")
		fmt.Fprintf(&b, "# or in .env (never commit them): %s\n", commentText(strings.Join(slices.Sorted(maps.Keys(c.secrets)), ", ")))
	}
	var unset []string
	for _, n := range slices.Sorted(maps.Keys(c.refs)) {
		if _, ok := c.src.dotenv[n]; !ok {
			unset = append(unset, n)
		}
	}
	if len(unset) > 0 {
		fmt.Fprintf(&b, "# Set before `git binky up` (read here, not set in .env): %s\n", commentText(strings.Join(unset, ", ")))
	}
	return b.String()
}

func writeLine(b *strings.Builder, l line) {
	switch {
	case l.key == "":
		fmt.Fprintf(b, "# %s\n", commentText(l.comment))
	case l.comment == "":
		fmt.Fprintf(b, "%s = %s\n", tomlKey(l.key), l.value)
	default:
		fmt.Fprintf(b, "%s = %s   # %s\n", tomlKey(l.key), l.value, commentText(l.comment))
	}
}

func dedupe(xs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
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

// discoverPorts gives a service the ports other services reach it on:
// containers talk on ports they never publish (memcached:11211), and on
// this machine each world's process needs a port of its own.
func (c *converter) discoverPorts() {
	for _, sv := range c.services {
		// Its own health check says where its container listens.
		if sv.kind == nil && sv.cfg.HealthCheck != nil && !sv.cfg.HealthCheck.Disable {
			test := strings.Join(sv.cfg.HealthCheck.Test, " ")
			var own []string
			for _, m := range localURL.FindAllStringSubmatch(test, -1) {
				if m[1] == "" {
					m[1] = "80"
				}
				own = append(own, m[1])
			}
			for _, m := range localPort.FindAllStringSubmatch(test, -1) {
				own = append(own, m[1])
			}
			for _, p := range own {
				sv.addPort(p)
			}
		}
		var texts []string
		for _, v := range sv.rawEnv() {
			if v != nil {
				texts = append(texts, fmt.Sprint(v))
				// ADDRESS: 0.0.0.0:8000 is where its own process listens.
				if m := listenAddr.FindStringSubmatch(fmt.Sprint(v)); m != nil && sv.kind == nil {
					if t, _ := c.target(sv, m[1], m[2], true); t == nil || t == sv {
						sv.addPort(m[2])
					}
				}
			}
		}
		for _, k := range []string{"command", "entrypoint"} {
			switch x := sv.raw[k].(type) {
			case string:
				texts = append(texts, x)
			case []any:
				for _, a := range x {
					texts = append(texts, fmt.Sprint(a))
				}
			}
		}
		for _, text := range texts {
			for _, m := range hostPortIn.FindAllStringSubmatch(text, -1) {
				t := c.byHost[strings.ToLower(m[2])]
				if t == nil || t == sv || t.kind != nil || m[3] == "" {
					continue
				}
				t.addPort(m[3][1:])
			}
		}
	}
}

// addPort adds a container port the service was found to listen on.
func (sv *service) addPort(port string) {
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || p == 0 {
		return
	}
	if _, has := sv.portToken(sv.name, port); !has && len(sv.ports) < maxPorts {
		sv.ports = append(sv.ports, cport{target: uint32(p), discovered: true})
		sv.choosePorts()
	}
}

package compose

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v4"

	"github.com/git-binky/git-binky/adapters"
	"github.com/git-binky/git-binky/world"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// golden are the corpus projects whose whole output is pinned.
var golden = map[string]bool{"wordpress-mysql": true, "nextcloud-postgres-apache": true, "netbox": true,
	"gitea-postgres": true, "react-express-mongodb": true, "sentry": true}

// TestCorpus runs init on real compose files of public projects (see
// testdata/corpus/README.md) and holds every result to the promise: it
// passes check, every container an adapter replaces is a slice, no
// credential is inline, and nothing is dropped without a note.
func TestCorpus(t *testing.T) { runCorpus(t, true) }

func runCorpus(t *testing.T, goldens bool) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "corpus", "*"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, dir := range dirs {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		n++
		t.Run(filepath.Base(dir), func(t *testing.T) {
			path, err := Find(dir)
			if err != nil {
				matches, _ := filepath.Glob(filepath.Join(dir, "*compose*.y*ml"))
				for _, m := range matches {
					if !strings.Contains(filepath.Base(m), ".override.") {
						path = m
					}
				}
				if path == "" {
					t.Fatal(err)
				}
			}
			res, err := Convert(context.Background(), path)
			if err != nil {
				t.Fatalf("init failed: %v", err)
			}
			checkResult(t, path, res)
			if goldens && golden[filepath.Base(dir)] {
				compareGolden(t, filepath.Join("testdata", "golden", filepath.Base(dir)+".toml"), res.TOML)
			}
		})
	}
	if n < 30 {
		t.Errorf("the corpus has %d projects; it should keep at least 30", n)
	}
}

func compareGolden(t *testing.T, golden, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./compose -update to write it, then read it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (run go test ./compose -update after reading the diff):\n%s", golden, got)
	}
}

// checkResult holds one conversion to init's promises.
func checkResult(t *testing.T, path string, res Result) {
	t.Helper()
	cfg, diags := world.ParseConfig("binky.toml", []byte(res.TOML))
	if cfg == nil {
		t.Fatalf("the written config does not parse: %v\n%s", diags, res.TOML)
	}
	diags = append(diags, world.CheckPortable(cfg, adapters.TableInfo)...)
	for _, d := range diags {
		t.Errorf("check: %s", d)
	}
	secrets, services, keys := composeFacts(t, path)
	for name, ks := range keys {
		block := serviceBlock(res.TOML, res.Services[name])
		for _, k := range ks {
			if !noteless[k] && !strings.Contains(block, k) {
				t.Errorf("service %s: compose key %s is neither carried nor noted:\n%s", name, k, block)
			}
		}
	}
	for name, image := range services {
		bn, ok := res.Services[name]
		if !ok {
			t.Errorf("compose service %s is not in binky.toml", name)
			continue
		}
		if _, replaced := adapters.ForImage(image); replaced && cfg.Services[bn].Adapter == "" {
			t.Errorf("service %s runs %s, which an adapter replaces, but is not a slice", name, image)
		}
	}
	for _, s := range secrets {
		if where := inline(cfg, res.TOML, s); where != "" {
			t.Errorf("a credential (%q) is written in binky.toml, in %s", s, where)
		}
	}
	if t.Failed() {
		t.Logf("binky.toml:\n%s", res.TOML)
	}
}

var flagSecret = regexp.MustCompile(`(?:^|\s)(?:-p|--password[= ]|-a |--requirepass )([^\s'"$]{3,})`)

// composeFacts reads the compose files and .env beside path on their own:
// the credential values they hold (values of credential-named keys,
// passwords in URLs and on command lines) and each service's image.
func composeFacts(t *testing.T, path string) ([]string, map[string]string, map[string][]string) {
	t.Helper()
	var secrets []string
	public := map[string]bool{filepath.Base(filepath.Dir(path)): true}
	addSecret := func(v string) {
		v = strings.TrimSpace(v)
		if len(v) >= 4 && !strings.Contains(v, "$") {
			secrets = append(secrets, v)
		}
	}
	dotenv, _ := readDotenv(filepath.Join(filepath.Dir(path), ".env"))
	for k, v := range dotenv {
		if world.SecretKey(k) {
			addSecret(v)
		}
	}
	services := map[string]string{}
	keys := map[string][]string{}
	files := []string{path}
	if o := overrideFile(path); o != "" {
		files = append(files, o)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := yaml.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		svcs, _ := doc["services"].(map[string]any)
		for name, v := range svcs {
			public[name] = true
			m, _ := v.(map[string]any)
			for k := range m {
				keys[name] = append(keys[name], k)
			}
			if img, ok := m["image"].(string); ok {
				services[name] = literal(parseVars(img), func(n string) (string, bool) { v, ok := dotenv[n]; return v, ok })
			} else if _, ok := services[name]; !ok {
				services[name] = ""
			}
			walkEnv(m["environment"], func(k, v string) {
				if world.SecretKey(k) {
					addSecret(v)
				} else {
					public[v] = true
				}
				if m := urlParts.FindStringSubmatch(v); m != nil {
					if _, pw, ok := strings.Cut(m[3], ":"); ok {
						addSecret(pw)
					}
				}
			})
			if hc, ok := m["healthcheck"].(map[string]any); ok {
				for _, fm := range flagSecret.FindAllStringSubmatch(strings.Join(anyStrings(hc["test"]), " "), -1) {
					addSecret(fm[1])
				}
			}
		}
	}
	// A password that is also the database name or a service's name is
	// written as that name, which is no leak.
	var out []string
	for _, s := range secrets {
		if !public[s] {
			out = append(out, s)
		}
	}
	return out, services, keys
}

// noteless are the compose keys whose mapping shows as binky keys or
// tokens rather than by name: image (the adapter, or the comment naming
// it), build (cwd, the note), command and entrypoint (cmd), ports and
// expose (url, ports), environment and env_file, depends_on, healthcheck
// (health), profiles (groups), stop_grace_period (stop_timeout), extends
// (the note at the top), and the names a service is reached by.
var noteless = map[string]bool{"image": true, "build": true, "command": true, "entrypoint": true, "ports": true,
	"expose": true, "environment": true, "env_file": true, "depends_on": true, "healthcheck": true, "profiles": true,
	"stop_grace_period": true, "extends": true, "container_name": true, "hostname": true, "links": true,
	"networks": true, "restart": true, "working_dir": true, "<<": true}

// serviceBlock is the text of [services.name] and its sub-tables.
func serviceBlock(toml, name string) string {
	start := strings.Index(toml, "[services."+name+"]\n")
	if start < 0 {
		return ""
	}
	rest := toml[start+1:]
	for _, l := range regexp.MustCompile(`(?m)^\[[^\]]+\]$`).FindAllStringIndex(rest, -1) {
		h := rest[l[0]:l[1]]
		if !strings.HasPrefix(h, "[services."+name+".") {
			return toml[start : start+1+l[0]]
		}
	}
	return toml[start:]
}

func walkEnv(v any, f func(k, v string)) {
	switch e := v.(type) {
	case map[string]any:
		for k, x := range e {
			if x != nil {
				f(k, strings.TrimSpace(strings.Trim(strings.TrimSpace(toString(x)), `"'`)))
			}
		}
	case []any:
		for _, it := range e {
			if k, x, ok := strings.Cut(toString(it), "="); ok {
				f(k, x)
			}
		}
	}
}

func anyStrings(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, toString(e))
		}
		return out
	}
	return nil
}

func toString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := yaml.Marshal(v)
	return strings.TrimSpace(string(b))
}

// inline says where secret is written in the config: in a value (outside
// ${...} tokens, as a word) or, for one long enough not to be a name too,
// anywhere in the file.
func inline(cfg *world.Config, src, secret string) string {
	word := regexp.MustCompile(`(^|[^A-Za-z0-9_])` + regexp.QuoteMeta(secret) + `($|[^A-Za-z0-9_])`)
	for name, s := range cfg.Services {
		vals := map[string]string{"cmd": s.Cmd, "admin_url": s.AdminURL}
		if s.Health != nil {
			vals["health.cmd"] = s.Health.Cmd
		}
		for k, v := range s.Env {
			vals["env."+k] = v
		}
		for k, v := range vals {
			if word.MatchString(stripTokens(v)) {
				return name + "." + k
			}
		}
	}
	if len(secret) >= 8 && strings.Contains(src, secret) {
		return "the file"
	}
	return ""
}

package world

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-binky/git-binky/gitx"
)

func messages(diags []Diagnostic) string {
	var b strings.Builder
	for _, d := range diags {
		b.WriteString(d.Message + "\n")
	}
	return b.String()
}

func TestEnvDefaultIsUsedOnlyWhenTheVariableIsUnsetOrEmpty(t *testing.T) {
	w := &World{}
	for _, tc := range []struct {
		in   string
		env  map[string]string
		want string
	}{
		{"${env.PW:-dev}", nil, "dev"},
		{"${env.PW:-dev}", map[string]string{"PW": ""}, "dev"},
		{"${env.PW:-dev}", map[string]string{"PW": "s3cret"}, "s3cret"},
		{"${env.PW:-}", nil, ""},
		{"a${env.HOST:-127.0.0.1}:${env.P:-80}b", nil, "a127.0.0.1:80b"},
		{"${env.PW}", nil, "${env.PW}"}, // no default: left as written (and up refuses it)
	} {
		if got := Interpolate(tc.in, w.Lookup(Coordinates{}, "", tc.env)); got != tc.want {
			t.Errorf("%s with %v = %q, want %q", tc.in, tc.env, got, tc.want)
		}
	}
}

func TestUnsetEnvNamesEveryVariableWithoutADefault(t *testing.T) {
	cfg, diags := ParseConfig("binky.toml", []byte(`[services.app]
cmd = "app --admin ${env.MF_ADMIN_PASSWORD}"
url = "app"
env = { LOG = "${env.LOG_LEVEL:-info}", KEY = "${env.API_KEY}" }
`))
	if hasErrors(diags) {
		t.Fatal(diags)
	}
	w := &World{Config: cfg, Worktree: &gitx.Worktree{Path: t.TempDir()}}
	err := w.UnsetEnv(&Record{}, []string{"API_KEY=k"}, "app")
	if err == nil || !strings.Contains(err.Error(), "${env.MF_ADMIN_PASSWORD} (service app)") || strings.Contains(err.Error(), "LOG_LEVEL") || strings.Contains(err.Error(), "API_KEY") {
		t.Fatalf("UnsetEnv = %v, want it to name MF_ADMIN_PASSWORD only", err)
	}
	if err := w.UnsetEnv(&Record{}, []string{"API_KEY=k", "MF_ADMIN_PASSWORD=x"}, "app"); err != nil {
		t.Fatal(err)
	}
}

// init writes a credential as `NAME = "${env.NAME}"`: with NAME unset the
// table's own NAME, holding the token as written, was taken for the
// variable being set, and the app started with the text "${env.NAME}" as
// its key. The table reads the environment it started from; the other
// fields read the whole of it, the table's values included.
func TestUnsetEnvIsNotSatisfiedByTheEnvTableItself(t *testing.T) {
	cfg, diags := ParseConfig("binky.toml", []byte(`[services.api]
cmd = "api --mode ${env.MODE} --key ${env.STRIPE_KEY}"
url = "api"
env = { STRIPE_KEY = "${env.STRIPE_KEY}", MODE = "dev", B = "${env.A}", A = "a" }
`))
	if hasErrors(diags) {
		t.Fatal(diags)
	}
	w := &World{Config: cfg, Worktree: &gitx.Worktree{Path: t.TempDir()}}
	err := w.UnsetEnv(&Record{}, nil, "api")
	if err == nil || !strings.Contains(err.Error(), "${env.STRIPE_KEY} (service api)") {
		t.Fatalf("UnsetEnv = %v, want it to name STRIPE_KEY", err)
	}
	// cmd reads MODE from the table; A, the table's too, sorts before B,
	// which reads it there.
	if strings.Contains(err.Error(), "MODE") || strings.Contains(err.Error(), "${env.A}") {
		t.Fatalf("UnsetEnv = %v: it named a variable the table sets before it is read", err)
	}
	if err := w.UnsetEnv(&Record{}, []string{"STRIPE_KEY=sk"}, "api"); err != nil {
		t.Fatalf("with STRIPE_KEY set: %v", err)
	}
	// Read before the table sets it: exporting it, as the message for an
	// unset variable says, would read the shell's value, not the table's.
	cfg, diags = ParseConfig("binky.toml", []byte(`[services.api]
cmd = "api"
url = "api"
env = { A_URL = "${env.DB_HOST}/x", DB_HOST = "localhost" }
`))
	if hasErrors(diags) {
		t.Fatal(diags)
	}
	w.Config = cfg
	err = w.UnsetEnv(&Record{}, nil, "api")
	if err == nil || !strings.Contains(err.Error(), "${env.DB_HOST} (service api) read in the env table before the table sets it") || strings.Contains(err.Error(), "export it") {
		t.Fatalf("UnsetEnv = %v, want it to say DB_HOST is read before the table sets it", err)
	}
}

func TestCheckWarnsOfUnsetEnvListenAddressesAndBadGoldenKeys(t *testing.T) {
	t.Setenv("BINKY_SET_FOR_TEST", "1")
	cfg, diags := ParseConfig("binky.toml", []byte(`[services.app]
cmd = "app --host 0.0.0.0"
url = "app"
env = { LISTEN_ADDR = "127.0.0.1:${self.port}", A = "${env.BINKY_SET_FOR_TEST}", B = "${env.BINKY_NEVER_SET_X}", C = "${env.BINKY_NEVER_SET_Y:-ok}" }
[services.quiet]
cmd = "app"
url = "quiet"
port_env = false
env = { LISTEN_ADDR = "127.0.0.1:${self.port}" }
[services.db]
adapter = "postgres"
golden_key = ["migrations/**"]
`))
	if hasErrors(diags) {
		t.Fatal(diags)
	}
	got := messages(Check(cfg, nil))
	for _, want := range []string{
		"${env.BINKY_NEVER_SET_X} is not set in this shell",
		"cmd listens on 0.0.0.0",
		`service "app" sets its own listen address (LISTEN_ADDR) and binky also gives it PORT`,
		`golden_key is only read with clone_from = "golden"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("check does not say %q:\n%s", want, got)
		}
	}
	for _, not := range []string{"BINKY_SET_FOR_TEST", "BINKY_NEVER_SET_Y", `service "quiet"`} {
		if strings.Contains(got, not) {
			t.Errorf("check warns of %s:\n%s", not, got)
		}
	}

	_, diags = ParseConfig("binky.toml", []byte(`[services.db]
adapter = "postgres"
clone_from = "golden"
golden_key = ["/etc/**", "../x", "[a"]
[services.app]
cmd = "app"
port_env = false
`))
	errs := messages(diags)
	for _, want := range []string{"is absolute", "leaves the worktree", "is not a valid glob", "asks for no port, so it gets no PORT"} {
		if !strings.Contains(errs, want) {
			t.Errorf("errors do not say %q:\n%s", want, errs)
		}
	}
}

func TestPortEnvFalseLeavesPortOut(t *testing.T) {
	cfg, diags := ParseConfig("binky.toml", []byte(`[services.on]
cmd = "x"
url = "on"
[services.off]
cmd = "x"
url = "off"
port_env = false
env = { LISTEN_ADDR = "127.0.0.1:${self.port}" }
`))
	if hasErrors(diags) {
		t.Fatal(diags)
	}
	w := &World{Config: cfg, Worktree: &gitx.Worktree{Path: t.TempDir()}}
	rec := &Record{Ports: map[string]int{"on": 4001, "off": 4002}}
	on, err := w.ProcessEnv(rec, nil, "on")
	if err != nil {
		t.Fatal(err)
	}
	off, err := w.ProcessEnv(rec, nil, "off")
	if err != nil {
		t.Fatal(err)
	}
	if on["PORT"] != "4001" {
		t.Errorf("PORT = %q, want 4001", on["PORT"])
	}
	if v, set := off["PORT"]; set || off["LISTEN_ADDR"] != "127.0.0.1:4002" || off["OFF_PORT"] != "4002" {
		t.Errorf("port_env = false: PORT %q (set %v), LISTEN_ADDR %q, OFF_PORT %q", v, set, off["LISTEN_ADDR"], off["OFF_PORT"])
	}
}

func TestGoldenKeyHashFollowsTheMatchedFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, body string) {
		p := filepath.Join(dir, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("migrations/001_init.sql", "CREATE TABLE a (id int);")
	write("README.md", "one")
	cfg, _ := ParseConfig("binky.toml", []byte("[services.db]\nadapter = \"postgres\"\nclone_from = \"golden\"\ngolden_key = [\"migrations/**\"]\n"))
	w := &World{Config: cfg, Worktree: &gitx.Worktree{Path: dir}}
	h1, err := w.GoldenKeyHash("db")
	if err != nil || h1 == "" {
		t.Fatal(h1, err)
	}
	write("README.md", "two") // not matched: same key
	if h, _ := w.GoldenKeyHash("db"); h != h1 {
		t.Error("an unmatched file changed the key")
	}
	write("migrations/sub/002_more.sql", "ALTER TABLE a ADD b int;") // ** reaches any depth
	h2, _ := w.GoldenKeyHash("db")
	if h2 == h1 {
		t.Error("a new migration did not change the key")
	}
	write("migrations/001_init.sql", "CREATE TABLE a (id bigint);")
	if h3, _ := w.GoldenKeyHash("db"); h3 == h2 {
		t.Error("an edited migration did not change the key")
	}
}

func TestMatchGlob(t *testing.T) {
	for _, tc := range []struct {
		pat, name string
		want      bool
	}{
		{"migrations/**", "migrations/001.sql", true},
		{"migrations/**", "migrations/a/b/c.sql", true},
		{"migrations/*.sql", "migrations/a/b.sql", false},
		{"**/*.sql", "db/x/1.sql", true},
		{"**/*.sql", "1.sql", true},
		{"schema.sql", "schema.sql", true},
		{"migrations/**", "other/001.sql", false},
	} {
		if got := MatchGlob(tc.pat, tc.name); got != tc.want {
			t.Errorf("MatchGlob(%q, %q) = %v", tc.pat, tc.name, got)
		}
	}
}

func TestCheckWarnsOfAMigrateThatCannotRunTwice(t *testing.T) {
	for _, tc := range []struct {
		migrate, clone string
		warn           bool
	}{
		{"psql -c 'CREATE TABLE items (id int)'", "golden", true},
		{"psql -c 'create unique index i on t (a)'", "golden", true},
		{"psql -c 'CREATE TABLE IF NOT EXISTS items (id int)'", "golden", false},
		{"psql -c 'CREATE TABLE items (id int)'", "", false}, // runs once per slice
		{"goose up", "golden", false},
	} {
		cfg, diags := ParseConfig("binky.toml", []byte("[services.db]\nadapter = \"postgres\"\nmigrate = \""+strings.ReplaceAll(tc.migrate, "'", "'")+"\"\nclone_from = \""+tc.clone+"\"\n"))
		if hasErrors(diags) && tc.clone != "" {
			t.Fatal(diags)
		}
		if cfg == nil {
			continue
		}
		got := strings.Contains(messages(Check(cfg, nil)), "migrate runs again on clones")
		if got != tc.warn {
			t.Errorf("%q (clone_from %q): warned %v, want %v", tc.migrate, tc.clone, got, tc.warn)
		}
	}
}

// ${env.PORT} and ${env.DB_URL} read the caller's environment, where
// binky's own variables are not: the up said "export it", which would hide
// the mistake. It says which form reads binky's value.
func TestUnsetEnvOfBinkysOwnVariableNamesTheFormThatReadsIt(t *testing.T) {
	cfg, diags := ParseConfig("binky.toml", []byte(`[services.db]
adapter = "postgres"
[services.api]
cmd = "api --port ${env.PORT} --db ${env.DB_URL}"
url = "api"
`))
	if hasErrors(diags) {
		t.Fatal(diags)
	}
	w := &World{Config: cfg, Worktree: &gitx.Worktree{Path: t.TempDir()}}
	err := w.UnsetEnv(&Record{}, nil, "api")
	if err == nil || !strings.Contains(err.Error(), "${env.DB_URL} (service api), ${env.PORT} (service api)") || !strings.Contains(err.Error(), "binky sets it in the service's own") || strings.Contains(err.Error(), "export it") {
		t.Fatalf("UnsetEnv = %v", err)
	}
}

// clone_migrate takes "always" or "changed" (an error names both, at the
// key), and check warns of one no clone reads.
func TestCloneMigrateIsCheckedAndWarnedOfWhereNoCloneReadsIt(t *testing.T) {
	_, diags := ParseConfig("binky.toml", []byte(`[services.db]
adapter = "postgres"
migrate = "make migrate"
clone_from = "golden"
clone_migrate = "sometimes"
`))
	if errs := messages(diags); !hasErrors(diags) || !strings.Contains(errs, `clone_migrate = "sometimes": use "always"`) || !strings.Contains(errs, `or "changed"`) {
		t.Errorf("errors:\n%s", errs)
	}
	cfg, diags := ParseConfig("binky.toml", []byte(`[services.db]
adapter = "postgres"
migrate = "make migrate"
clone_migrate = "changed"
[services.cache]
adapter = "postgres"
migrate = "make migrate"
clone_from = "golden"
clone_migrate = "changed"
`))
	if hasErrors(diags) {
		t.Fatal(diags)
	}
	got := Check(cfg, nil)
	var lines []int
	for _, d := range got {
		if strings.Contains(d.Message, "clone_migrate is only read") {
			lines = append(lines, d.Line)
		}
	}
	if len(lines) != 1 || lines[0] != 4 {
		t.Errorf("clone_migrate warnings at lines %v, want one at db's (line 4: it has no clone_from):\n%s", lines, messages(got))
	}
}

// An env file a new worktree lacks (git does not carry an ignored .env)
// was reported as a bare "no such file": say where it comes from.
func TestAMissingEnvFileSaysToCopyItIn(t *testing.T) {
	_, err := ReadEnvFile(filepath.Join(t.TempDir(), ".env"))
	if err == nil || !strings.Contains(err.Error(), "copy it from a worktree that has it") || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadEnvFile of a missing file: %v", err)
	}
}

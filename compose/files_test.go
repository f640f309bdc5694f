//go:build unix

package compose

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v4"
)

// convertWithin converts path, failing the test if it takes longer than
// d: a read of /dev/zero or a wait on a FIFO must be an error, not a hang.
func convertWithin(t *testing.T, d time.Duration, convert func() (Result, error)) (Result, error) {
	t.Helper()
	type result struct {
		res Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := convert()
		done <- result{res, err}
	}()
	select {
	case r := <-done:
		return r.res, r.err
	case <-time.After(d):
		t.Fatalf("init still running after %s", d)
	}
	return Result{}, nil
}

// writeTree writes files into dir; a value "->target" is a symbolic link
// to target, and "<fifo>" a named pipe. A FIFO gets a cleanup that opens
// it for writing, so that a reader left waiting on it is let go.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch {
		case strings.HasPrefix(body, "->"):
			err = os.Symlink(strings.TrimPrefix(body, "->"), p)
		case body == "<fifo>":
			err = syscall.Mkfifo(p, 0o644)
			t.Cleanup(func() {
				if f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					f.Close()
				}
			})
		default:
			err = os.WriteFile(p, []byte(body), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// sparse makes a file of size bytes that takes no room on disk.
func sparse(t *testing.T, path string, size int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
}

// An alias bomb under include (406 bytes that expand to 387 million
// strings) is compose's to refuse, and init must get that far: it ran out
// of memory listing the included names first.
func TestAnAliasBombUnderIncludeIsRefusedNotExpanded(t *testing.T) {
	var b strings.Builder
	b.WriteString(`x-a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]` + "\n")
	for c := 'b'; c <= 'i'; c++ {
		p := "*" + string(c-1)
		fmt.Fprintf(&b, "x-%c: &%c [%s]\n", c, c, strings.Repeat(p+",", 8)+p)
	}
	b.WriteString("include: *i\nservices: {web: {image: nginx}}\n")
	path := filepath.Join(t.TempDir(), "compose.yaml")
	_, err := convertWithin(t, 20*time.Second, func() (Result, error) {
		return ConvertBytes(context.Background(), path, []byte(b.String()), nil, "bomb")
	})
	if err == nil || !strings.HasPrefix(err.Error(), path) {
		t.Errorf("an alias bomb: %v, want an error naming %s", err, path)
	}
}

// One environment mapping named by alias in many services is read once:
// listing how its numbers were written once per alias made the list grow
// as services times keys.
func TestAnEnvironmentNamedByManyAliasesIsReadOnce(t *testing.T) {
	var b strings.Builder
	b.WriteString("x-env: &env\n")
	for i := 0; i < 2000; i++ {
		fmt.Fprintf(&b, "  V%d: %d\n", i, i)
	}
	b.WriteString("services:\n")
	for i := 0; i < 40000; i++ {
		fmt.Fprintf(&b, "  s%d: {image: nginx, environment: *env}\n", i)
	}
	s := &source{numbers: map[string][]string{}, nodes: map[string]*yaml.Node{}}
	doc, err := s.shape("compose.yaml", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	s.noteMerges(doc, "compose.yaml")
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("reading 40000 aliases of one environment took %s", d)
	}
	if got := s.written("V7", 7); got != "7" {
		t.Errorf("V7 was written %q, want 7", got)
	}
}

// Every file compose-go would read for init (what include and extends
// name, through the files they name, and the env files of an include) is
// a regular file of a bounded size, or init refuses it naming where it is
// named: compose-go reads each whole with os.ReadFile, so /dev/zero ran
// init out of memory and a FIFO hung it past Ctrl-C.
func TestWhatIncludeAndExtendsNameIsARegularFileOfBoundedSize(t *testing.T) {
	web := "services:\n  web:\n    image: nginx\n"
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  []string // in the error
	}{
		{"include of /dev/zero", map[string]string{
			"compose.yaml": "include: [/dev/zero]\n" + web,
		}, []string{"compose.yaml:1:11:", `"/dev/zero"`, "not a regular file"}},
		{"extends of /dev/zero", map[string]string{
			"compose.yaml": web + "    extends: {file: /dev/zero, service: x}\n",
		}, []string{"compose.yaml:4:21:", `extends file "/dev/zero"`, "not a regular file"}},
		{"an include's env_file linked to /dev/zero", map[string]string{
			"compose.yaml": "include:\n  - path: sub.yaml\n    env_file: z.env\n" + web,
			"sub.yaml":     "services:\n  sub:\n    image: nginx\n",
			"z.env":        "->/dev/zero",
		}, []string{"compose.yaml:3:15:", "z.env", "not a regular file"}},
		{"an include's env_file of a list", map[string]string{
			"compose.yaml": "include:\n  - path: [sub.yaml]\n    env_file: [ok.env, z.env]\n" + web,
			"sub.yaml":     "services:\n  sub:\n    image: nginx\n",
			"ok.env":       "A=1\n",
			"z.env":        "->/dev/zero",
		}, []string{"compose.yaml:3:24:", "z.env", "not a regular file"}},
		{"the .env compose reads in an included project", map[string]string{
			"compose.yaml":     "include: [sub/compose.yaml]\n" + web,
			"sub/compose.yaml": "services:\n  sub:\n    image: nginx\n",
			"sub/.env":         "->/dev/zero",
		}, []string{"compose.yaml:1:11:", "sub/.env", "not a regular file"}},
		{"an include that is a FIFO", map[string]string{
			"compose.yaml": "include: [sub.yaml]\n" + web,
			"sub.yaml":     "<fifo>",
		}, []string{"compose.yaml:1:11:", "sub.yaml", "not a regular file"}},
		{"the second path of an include", map[string]string{
			"compose.yaml": "include:\n  - path: [sub.yaml, more.yaml]\n" + web,
			"sub.yaml":     "services:\n  sub:\n    image: nginx\n",
			"more.yaml":    "<fifo>",
		}, []string{"compose.yaml:2:22:", "more.yaml", "not a regular file"}},
		{"an include inside an included file, from its own folder", map[string]string{
			"compose.yaml":     "include: [sub/compose.yaml]\n" + web,
			"sub/compose.yaml": "include: [inner.yaml]\nservices:\n  sub:\n    image: nginx\n",
			"sub/inner.yaml":   "<fifo>",
		}, []string{"sub/compose.yaml:1:11:", "inner.yaml", "not a regular file"}},
		{"an include under a project_directory", map[string]string{
			"compose.yaml":     "include:\n  - path: sub/compose.yaml\n    project_directory: other\n" + web,
			"sub/compose.yaml": "include: [inner.yaml]\nservices:\n  sub:\n    image: nginx\n",
			"other/inner.yaml": "<fifo>",
		}, []string{"sub/compose.yaml:1:11:", "inner.yaml", "not a regular file"}},
		{"an extends inside an included file", map[string]string{
			"compose.yaml":     "include: [sub/compose.yaml]\n" + web,
			"sub/compose.yaml": "services:\n  sub:\n    extends: {file: base.yaml, service: b}\n",
			"sub/base.yaml":    "<fifo>",
		}, []string{"sub/compose.yaml:3:21:", "base.yaml", "not a regular file"}},
		{"an extends of an extended file", map[string]string{
			"compose.yaml":    web + "    extends: {file: lib/base.yaml, service: b}\n",
			"lib/base.yaml":   "services:\n  b:\n    extends: {file: deeper.yaml, service: c}\n",
			"lib/deeper.yaml": "<fifo>",
		}, []string{"base.yaml:3:21:", "deeper.yaml", "not a regular file"}},
		{"an extends merged in with <<", map[string]string{
			"compose.yaml": "x-base: &base\n  extends: {file: /dev/zero, service: x}\n" + web + "    <<: *base\n",
		}, []string{"compose.yaml:2:19:", "/dev/zero", "not a regular file"}},
		{"an include named by a variable of .env", map[string]string{
			".env":         "INC=/dev/zero\n",
			"compose.yaml": "include: [\"${INC}\"]\n" + web,
		}, []string{"compose.yaml:1:11:", `"${INC}"`, "/dev/zero", "not a regular file"}},
		{"an include read as written, as init's uninterpolated second read does", map[string]string{
			".env":         "INC=sub.yaml\n",
			"compose.yaml": "include: [\"${INC}\"]\n" + web,
			"sub.yaml":     "services:\n  sub:\n    image: nginx\n",
			"${INC}":       "<fifo>",
		}, []string{"compose.yaml:1:11:", `"${INC}"`, "not a regular file"}},
		{"an include named by a variable of the including env_file", map[string]string{
			"compose.yaml":     "include:\n  - path: sub/compose.yaml\n    env_file: sub.env\n" + web,
			"sub.env":          "INNER=/dev/zero\n",
			"sub/compose.yaml": "include: [\"${INNER}\"]\nservices:\n  sub:\n    image: nginx\n",
		}, []string{"sub/compose.yaml:1:11:", "/dev/zero", "not a regular file"}},
		{"an include past the size limit", map[string]string{
			"compose.yaml": "include: [big.yaml]\n" + web,
		}, []string{"compose.yaml:1:11:", "big.yaml", "over binky's size limit"}},
		{"an include whose path init cannot interpolate", map[string]string{
			"compose.yaml": "include: [\"${MISSING:?set it}\"]\n" + web,
		}, []string{"compose.yaml:1:11:", "MISSING", "set it"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, tc.files)
			if strings.Contains(tc.name, "size limit") {
				sparse(t, filepath.Join(dir, "big.yaml"), maxComposeFileSize+1)
			}
			_, err := convertWithin(t, 20*time.Second, func() (Result, error) {
				return Convert(context.Background(), filepath.Join(dir, "compose.yaml"))
			})
			if err == nil {
				t.Fatalf("init read it: want an error with %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error does not say %q: %v", w, err)
				}
			}
		})
	}
}

// The main compose file and its override are read only as regular files
// of a bounded size: either may be a link to a 3 GB file.
func TestAComposeFileOrOverridePastTheLimitIsRefused(t *testing.T) {
	for _, big := range []string{"compose.yaml", "compose.override.yaml"} {
		t.Run(big, func(t *testing.T) {
			dir := t.TempDir()
			sparse(t, filepath.Join(dir, "huge"), 3<<30)
			if big == "compose.yaml" {
				writeTree(t, dir, map[string]string{"compose.yaml": "->huge"})
			} else {
				writeTree(t, dir, map[string]string{"compose.yaml": "services:\n  web:\n    image: nginx\n", big: "->huge"})
			}
			_, err := convertWithin(t, 20*time.Second, func() (Result, error) {
				return Convert(context.Background(), filepath.Join(dir, "compose.yaml"))
			})
			if err == nil || !strings.Contains(err.Error(), big) || !strings.Contains(err.Error(), "size limit") {
				t.Errorf("a %s of 3 GB: %v", big, err)
			}
		})
	}
}

// What compose reads through include (long form, a list of paths, a
// nested include, an env file) and extends (of an extended file) still
// loads when every file is an ordinary one.
func TestOrdinaryIncludesAndExtendsStillLoad(t *testing.T) {
	res, cfg := converted(t, map[string]string{
		"compose.yaml": `include:
  - extra.yml
  - path: [sub/compose.yaml, sub/more.yaml]
    env_file: sub.env
services:
  web:
    extends: {file: lib/base.yml, service: base}
    command: ./web
`,
		"extra.yml":        "services:\n  extra:\n    build: .\n    command: ./extra\n",
		"sub.env":          "INNER=1\n",
		"sub/compose.yaml": "include: [inner.yaml]\nservices:\n  sub:\n    build: .\n    command: ./sub\n",
		"sub/more.yaml":    "services:\n  sub:\n    environment: {MORE: \"1\"}\n",
		"sub/inner.yaml":   "services:\n  inner:\n    build: .\n    command: ./inner\n",
		"lib/base.yml":     "services:\n  base:\n    extends: {file: root.yml, service: root}\n    build: .\n",
		"lib/root.yml":     "services:\n  root:\n    environment: {FROM_ROOT: \"1\"}\n",
	})
	for _, n := range []string{"web", "extra", "sub", "inner"} {
		if cfg.Services[n] == nil {
			t.Errorf("no service %s:\n%s", n, res.TOML)
		}
	}
	if cfg.Services["web"].Env["FROM_ROOT"] != "1" || cfg.Services["sub"].Env["MORE"] != "1" {
		t.Errorf("extends or an include's second path not merged:\n%s", res.TOML)
	}
}

// init does not fetch a remote include (git or OCI): compose-go reads it
// as a local path, which is not there, and init says so as it always has.
func TestARemoteIncludeIsNotFetched(t *testing.T) {
	for _, inc := range []string{"oci://docker.io/acme/stack:latest", "git@github.com:acme/stack.git", "https://github.com/acme/stack.git#main:compose.yaml"} {
		_, err := project(t, map[string]string{"compose.yaml": "include: [\"" + inc + "\"]\nservices:\n  web:\n    image: nginx\n"})
		if err == nil || !strings.Contains(err.Error(), "no such file or directory") {
			t.Errorf("include %s: %v", inc, err)
		}
	}
}

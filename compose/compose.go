// Package compose turns a compose project (docker-compose.yml, its
// override, what it includes and extends, and the .env beside it) into a
// binky.toml a person can read. It loads the files with compose-spec's own
// loader, so what compose accepts is what init reads; images the adapter
// table knows become slices, and a dependent's variables that pointed at
// their containers are wired to the slice (${db.url}, ${db.user}...);
// published ports become url and ports; depends_on, env_file, health
// checks, restart and profiles (as groups) carry over; everything else is
// written down as a marked note. No credential is written inline: it
// becomes ${env.NAME} and is listed. The result is parsed and checked with
// the loader `git binky check` uses before it is returned, and is never
// returned when that fails.
package compose

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/git-binky/git-binky/adapters"
	"github.com/git-binky/git-binky/gitx"
	"github.com/git-binky/git-binky/world"
)

// Files is where Find looks, first found wins (compose's own order).
var Files = []string{"compose.yaml", "compose.yml", "docker-compose.yml", "docker-compose.yaml"}

// ErrNoCompose is returned when a folder has no compose file.
var ErrNoCompose = errors.New("no compose file")

// ErrInvalidOutput is returned when the config init wrote does not load:
// a bug in init, never written to disk.
var ErrInvalidOutput = errors.New("init wrote a binky.toml that does not load")

// Result is a converted project.
type Result struct {
	Source string   // the main compose file
	Files  []string // every file read (main, override)
	TOML   string
	// Secrets are the credentials kept out of the file: each is written
	// ${env.NAME}; set them in the environment or .env.
	Secrets []string
	// SetEnv are the variables the file reads that .env does not set.
	SetEnv []string
	// Mapped, Guessed and Left summarise the conversion: what carried over
	// as it was, what init inferred (marked "guessed:" in the file), and
	// what it left to the user (marked "left to you:").
	Mapped, Guessed, Left []string
	// Warnings are what `git binky check` says of the result.
	Warnings []world.Diagnostic
	// Services maps each compose service to its binky name.
	Services map[string]string
}

// Find returns the compose file in dir.
func Find(dir string) (string, error) {
	for _, f := range Files {
		p := filepath.Join(dir, f)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %w (looked for %s)", dir, ErrNoCompose, strings.Join(Files, ", "))
}

// Convert reads the compose project whose main file is path, with the .env
// beside it.
func Convert(ctx context.Context, path string) (Result, error) {
	dotenv, err := readDotenv(filepath.Join(filepath.Dir(path), ".env"))
	if err != nil {
		return Result{}, err
	}
	return convert(ctx, path, nil, dotenv, filepath.Base(filepath.Dir(path)), len(dotenv) > 0 && dotenvTracked(ctx, filepath.Dir(path)))
}

// dotenvTracked reports whether the .env in dir is committed, and so in
// every worktree already: nothing to copy. (A variable: tests of the
// conversion do not depend on the repository they run in.)
var dotenvTracked = func(ctx context.Context, dir string) bool {
	_, err := gitx.Git(ctx, dir, "ls-files", "--error-unmatch", "--", ".env")
	return err == nil
}

// ConvertBytes converts compose source as if it were the file at path,
// with dotenv as its .env; project is the name used when the file sets
// none.
func ConvertBytes(ctx context.Context, path string, src []byte, dotenv map[string]string, project string) (Result, error) {
	if dotenv == nil {
		dotenv = map[string]string{}
	}
	return convert(ctx, path, src, dotenv, project, false)
}

func convert(ctx context.Context, path string, src []byte, dotenv map[string]string, project string, dotenvTracked bool) (res Result, err error) {
	defer func() {
		// Bad input must be an error, never a crash: the loader is not ours.
		if r := recover(); r != nil {
			res, err = Result{}, fmt.Errorf("%s: init could not read it (%v); please report it with the compose file", path, r)
		}
	}()
	s, err := load(ctx, path, src, dotenv, project)
	if err != nil {
		return Result{}, err
	}
	s.dotenvTracked = dotenvTracked
	c := newConverter(s)
	out := c.render()
	res = Result{Source: path, Files: s.files, TOML: out, Secrets: slices.Sorted(maps.Keys(c.secrets)), Mapped: c.mapped, Guessed: c.guessed, Left: c.left,
		Services: map[string]string{}}
	for _, sv := range c.services {
		res.Services[sv.compose] = sv.name
	}
	for _, n := range slices.Sorted(maps.Keys(c.refs)) {
		if _, ok := dotenv[n]; !ok {
			res.SetEnv = append(res.SetEnv, n)
		}
	}
	if len(out) > world.MaxConfigSize {
		// check refuses a binky.toml this large: a limit of binky's too.
		return res, fmt.Errorf("%s gives a binky.toml of %d KiB (%d services), and binky reads one of at most %d KiB: split it into worlds of fewer services", path, (len(out)+1023)>>10, len(c.services), world.MaxConfigSize>>10)
	}
	cfg, diags := world.ParseConfig(world.ConfigFile, []byte(out))
	if cfg != nil {
		// A limit of binky's, not a fault of init's: said as such.
		ports := 0
		for _, n := range cfg.ServiceNames() {
			ports += len(cfg.Services[n].PortKeys())
		}
		if ports > world.MaxPortsPerWorld {
			return res, fmt.Errorf("%s asks for %d ports, and a world may have at most %d: split it into worlds of fewer services, or publish fewer ports", path, ports, world.MaxPortsPerWorld)
		}
	}
	if cfg != nil && !hasErrors(diags) {
		diags = world.CheckPortable(cfg, adapters.TableInfo)
	}
	var errs []string
	for _, d := range diags {
		if d.Severity == world.SeverityError {
			errs = append(errs, d.String())
		} else {
			res.Warnings = append(res.Warnings, d)
		}
	}
	if len(errs) > 0 {
		return res, fmt.Errorf("%w (from %s; please report it with the compose file): %s", ErrInvalidOutput, path, strings.Join(errs, "; "))
	}
	return res, nil
}

func hasErrors(diags []world.Diagnostic) bool {
	for _, d := range diags {
		if d.Severity == world.SeverityError {
			return true
		}
	}
	return false
}

// Options are what `git binky init` asks for.
type Options struct {
	Dir   string // the folder holding the compose file; binky.toml is written there
	Force bool   // overwrite an existing binky.toml
}

// Init converts the compose project in opts.Dir and writes binky.toml
// beside it, only when the result loads. It returns where it wrote.
func Init(ctx context.Context, opts Options) (string, Result, error) {
	out := filepath.Join(opts.Dir, world.ConfigFile)
	// Lstat: a link named binky.toml, even one to nothing, is the user's.
	if _, err := os.Lstat(out); err == nil && !opts.Force {
		return out, Result{}, fmt.Errorf("%s already exists: init will not overwrite it (use --force to replace it)", out)
	}
	src, err := Find(opts.Dir)
	if err != nil {
		if errors.Is(err, ErrNoCompose) {
			return out, Result{}, fmt.Errorf("%w: init starts from a compose file; without one, write binky.toml by hand (see README.md)", err)
		}
		return out, Result{}, err
	}
	res, err := Convert(ctx, src)
	if err != nil {
		return out, res, err
	}
	if err := world.WriteFileAtomic(out, []byte(res.TOML), 0o644); err != nil {
		return out, res, fmt.Errorf("write %s: %w", out, err)
	}
	return out, res, nil
}

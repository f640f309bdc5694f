package compose

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/compose-spec/compose-go/v2/dotenv"
	"github.com/compose-spec/compose-go/v2/template"
	"go.yaml.in/yaml/v4"

	"github.com/git-binky/git-binky/smallfile"
	"github.com/git-binky/git-binky/world"
)

// Bounds on what compose-go is let read: it reads every file it is pointed
// at with os.ReadFile, so a repository could point it at /dev/zero, a FIFO
// or a 3 GB file. Real compose files are a few KiB (Sentry's is 30).
const (
	maxComposeFileSize = 4 << 20  // one compose file
	maxProjectRead     = 32 << 20 // every compose and env file init reads for one project
	maxProjectFiles    = 1024     // includes and extends followed for one project
)

// readComposeFile reads a compose file init was pointed at: a regular file
// of at most maxComposeFileSize, never a wait on a FIFO.
func readComposeFile(path string) ([]byte, error) {
	b, err := smallfile.Read(path, maxComposeFileSize)
	if errors.Is(err, smallfile.ErrNotRegular) || errors.Is(err, smallfile.ErrTooLarge) {
		return nil, fmt.Errorf("read compose file: %w: init reads a regular file of at most %d MiB: replace it with one", err, maxComposeFileSize>>20)
	}
	if err != nil {
		return nil, fmt.Errorf("read compose file: %w", err)
	}
	return b, nil
}

// view is what compose-go knows while it reads one file: loaderDir is
// where a relative include path or extends.file is joined (the file's
// project directory); workDir is where a relative include env_file or
// project_directory is joined (compose-go's working dir, which for a
// nested include is a path relative to the parent's project directory,
// and so is read against the process's own); env is what ${VAR} reads.
type view struct {
	loaderDir, workDir string
	env                map[string]string
	envSum             string // env's digest, for seen
	extendsOnly        bool   // read for extends: compose-go skips its include
	// raw: paths are read as written. init loads the project twice, the
	// second time uninterpolated (load's raw model), and compose-go then
	// reads "${VAR}.yaml" as that name.
	raw bool
}

// refCheck walks what compose-go will read before it reads it.
type refCheck struct {
	seen  map[string]bool // file and view already walked
	bytes int64
	files int
}

// checkReferences walks every include (with its env_file, project_directory
// and the .env it reads by default) and every extends.file, through the
// files they name, and refuses what is not a regular file within the
// bounds: compose-go would read it whole, or wait on it for ever. Each is
// resolved as compose-go resolves it, and against the folder of the file
// naming it too, so that no plausible reading escapes the check.
func (s *source) checkReferences(docs map[string][]*yaml.Node) error {
	rc := &refCheck{seen: map[string]bool{}}
	for _, raw := range []bool{false, true} {
		v := view{loaderDir: s.dir, workDir: s.dir, env: s.dotenv, envSum: digest(s.dotenv), raw: raw}
		for _, f := range s.files {
			for _, doc := range docs[f] {
				if err := rc.walk(f, doc, v); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// documents parses every YAML document of a file, as compose-go reads
// them all; its nodes share what aliases name, so a bomb stays small.
func documents(path string, src []byte) ([]*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var docs []*yaml.Node
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return docs, yamlError(path, err)
		}
		docs = append(docs, &doc)
	}
}

func (rc *refCheck) walk(file string, doc *yaml.Node, v view) error {
	if doc == nil || len(doc.Content) == 0 {
		return nil
	}
	top := resolveAlias(doc.Content[0])
	if !v.extendsOnly {
		for _, inc := range includes(top) {
			if err := rc.include(file, inc, v); err != nil {
				return err
			}
		}
	}
	for _, key := range []string{"services", "jobs"} {
		svcs := resolveAlias(lookup(top, key))
		if svcs == nil || svcs.Kind != yaml.MappingNode {
			continue
		}
		exts := newMerged("extends")
		files := newMerged("file")
		for _, e := range entries(svcs) {
			f := resolveAlias(files.get(exts.get(e[1])))
			if f == nil || f.Kind != yaml.ScalarNode {
				continue
			}
			if err := rc.extends(file, f, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// includeRef is one entry of include: the short form (a path) or the long
// one (path, env_file, project_directory).
type includeRef struct {
	at         *yaml.Node
	paths      []*yaml.Node
	envFiles   []*yaml.Node
	projectDir *yaml.Node
}

// includes reads a file's include list without following an alias more
// than once per entry: what it visits is what the file's text holds.
func includes(top *yaml.Node) []includeRef {
	list := resolveAlias(lookup(top, "include"))
	if list == nil || list.Kind != yaml.SequenceNode {
		return nil
	}
	var out []includeRef
	for _, it := range list.Content {
		it = resolveAlias(it)
		switch it.Kind {
		case yaml.ScalarNode:
			out = append(out, includeRef{at: it, paths: []*yaml.Node{it}})
		case yaml.MappingNode:
			r := includeRef{at: it, paths: scalars(lookup(it, "path")), envFiles: scalars(lookup(it, "env_file"))}
			if pd := resolveAlias(lookup(it, "project_directory")); pd != nil && pd.Kind == yaml.ScalarNode {
				r.projectDir = pd
			}
			out = append(out, r)
		}
	}
	return out
}

// scalars is a string or a list of strings, as compose's StringList.
func scalars(n *yaml.Node) []*yaml.Node {
	n = resolveAlias(n)
	if n == nil {
		return nil
	}
	if n.Kind == yaml.ScalarNode {
		return []*yaml.Node{n}
	}
	var out []*yaml.Node
	if n.Kind == yaml.SequenceNode {
		for _, c := range n.Content {
			if c = resolveAlias(c); c.Kind == yaml.ScalarNode {
				out = append(out, c)
			}
		}
	}
	return out
}

func (rc *refCheck) include(file string, r includeRef, v view) error {
	if len(r.paths) == 0 {
		return nil
	}
	paths := make([]string, len(r.paths))
	for i, n := range r.paths {
		p, err := v.interpolate(file, n, "include")
		if err != nil {
			return err
		}
		paths[i] = p
	}
	var pd string
	if r.projectDir != nil {
		p, err := v.interpolate(file, r.projectDir, "include project_directory")
		if err != nil {
			return err
		}
		pd = p
	}
	// The project directory and working dir compose-go gives the included
	// files (loader/include.go), from the first path.
	first := joinPath(v.loaderDir, paths[0])
	var projectDir, workDir string
	switch {
	case pd == "":
		projectDir, workDir = filepath.Dir(first), relDir(v.loaderDir, paths[0])
	case filepath.IsAbs(pd):
		projectDir, workDir = pd, pd
	default:
		projectDir, workDir = filepath.Join(v.workDir, pd), relDir(v.loaderDir, pd)
	}
	// The env files, and the variables they give the included files.
	vars := map[string]string{}
	lookupVar := func(k string) (string, bool) {
		if x, ok := v.env[k]; ok {
			return x, true
		}
		x, ok := vars[k]
		return x, ok
	}
	readEnv := func(at *yaml.Node, what, path string, use bool) error {
		b, err := rc.read(file, at, what, path, world.MaxEnvFileSize)
		if err != nil || b == nil || !use {
			return err
		}
		got, err := dotenv.UnmarshalBytesWithLookup(b, lookupVar)
		if err != nil {
			return nil // compose-go says what is wrong with it
		}
		maps.Copy(vars, got)
		return nil
	}
	if len(r.envFiles) == 0 {
		// compose-go reads the .env of the included project when there is one.
		what := fmt.Sprintf("include %q reads the .env of its project", r.paths[0].Value)
		if err := readEnv(r.at, what, filepath.Join(projectDir, ".env"), true); err != nil {
			return err
		}
	}
	for _, n := range r.envFiles {
		f, err := v.interpolate(file, n, "include env_file")
		if err != nil {
			return err
		}
		if f == "/dev/null" {
			continue // compose-go skips it
		}
		for i, c := range candidates(file, f, v.workDir, v.loaderDir) {
			if err := readEnv(n, fmt.Sprintf("include env_file %q", n.Value), c, i == 0); err != nil {
				return err
			}
		}
	}
	env := maps.Clone(v.env)
	for k, x := range vars {
		if _, set := env[k]; !set {
			env[k] = x // compose-go's Mapping.Merge: the parent's value wins
		}
	}
	sum := digest(env)
	views := []view{{loaderDir: projectDir, workDir: workDir, env: env, envSum: sum, raw: v.raw}}
	if abs(workDir) != abs(projectDir) {
		// Where a reader would expect it: checked as well.
		views = append(views, view{loaderDir: projectDir, workDir: projectDir, env: env, envSum: sum, raw: v.raw})
	}
	for i, p := range paths {
		for j, c := range candidates(file, p, v.loaderDir) {
			vs := views
			if j > 0 {
				// Not where compose-go looks: checked all the same, as
				// if it were read from its own folder.
				vs = []view{{loaderDir: filepath.Dir(c), workDir: filepath.Dir(c), env: env, envSum: sum, raw: v.raw}}
			}
			if err := rc.follow(file, r.paths[i], fmt.Sprintf("include %q", r.paths[i].Value), c, vs); err != nil {
				return err
			}
		}
	}
	return nil
}

func (rc *refCheck) extends(file string, n *yaml.Node, v view) error {
	p, err := v.interpolate(file, n, "extends file")
	if err != nil {
		return err
	}
	for _, c := range candidates(file, p, v.loaderDir) {
		// compose-go reads the base file's own extends.file from its folder.
		base := view{loaderDir: filepath.Dir(c), workDir: filepath.Dir(c), env: v.env, envSum: v.envSum, extendsOnly: true, raw: v.raw}
		if err := rc.follow(file, n, fmt.Sprintf("extends file %q", n.Value), c, []view{base}); err != nil {
			return err
		}
	}
	return nil
}

// follow checks the compose file at path and walks it in each view.
func (rc *refCheck) follow(file string, at *yaml.Node, what, path string, views []view) error {
	var todo []view
	for _, v := range views {
		if k := v.key(path); !rc.seen[k] {
			rc.seen[k] = true
			todo = append(todo, v)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	b, err := rc.read(file, at, what, path, maxComposeFileSize)
	if err != nil || b == nil {
		return err
	}
	docs, err := documents(path, b)
	if err != nil && len(docs) == 0 {
		return nil // compose-go says where it is not YAML
	}
	for _, v := range todo {
		for _, doc := range docs {
			if err := rc.walk(path, doc, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// read returns the file compose-go would read at path, nil when there is
// none (compose-go says so itself), or an error naming the reference (what,
// at file:line:column) when it is no regular file within max.
func (rc *refCheck) read(file string, at *yaml.Node, what, path string, max int64) ([]byte, error) {
	rc.files++
	if rc.files > maxProjectFiles {
		return nil, fmt.Errorf("%s:%d:%d: %s: the project's includes and extends name more than %d files: init stops here; make it smaller", file, at.Line, at.Column, what, maxProjectFiles)
	}
	b, err := smallfile.Read(path, max)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return nil, nil
	case errors.Is(err, smallfile.ErrNotRegular):
		if fi, serr := os.Stat(path); serr == nil && fi.IsDir() {
			return nil, nil // compose-go refuses a folder without reading it
		}
		return nil, fmt.Errorf("%s:%d:%d: %s: %w: compose would wait on it or read it without end; point it at a regular file", file, at.Line, at.Column, what, err)
	case errors.Is(err, smallfile.ErrTooLarge):
		return nil, fmt.Errorf("%s:%d:%d: %s: %w: init reads files of at most %d KiB there; point it at a smaller file", file, at.Line, at.Column, what, err, max>>10)
	case err != nil:
		return nil, fmt.Errorf("%s:%d:%d: %s: %w", file, at.Line, at.Column, what, err)
	}
	rc.bytes += int64(len(b))
	if rc.bytes > maxProjectRead {
		return nil, fmt.Errorf("%s:%d:%d: %s: the project's compose and env files come to more than %d MiB: init stops here; make it smaller", file, at.Line, at.Column, what, maxProjectRead>>20)
	}
	return b, nil
}

func (v view) key(path string) string {
	return fmt.Sprintf("%s\x00%s\x00%s\x00%t%t\x00%s", abs(path), abs(v.loaderDir), abs(v.workDir), v.extendsOnly, v.raw, v.envSum)
}

func digest(env map[string]string) string {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(env)) {
		fmt.Fprintf(h, "%d:%s%d:%s", len(k), k, len(env[k]), env[k])
	}
	return string(h.Sum(nil))
}

// interpolate applies ${VAR} to a path as compose-go does, with the
// variables it will have.
func (v view) interpolate(file string, n *yaml.Node, what string) (string, error) {
	if v.raw {
		return n.Value, nil
	}
	unknown := ""
	out, err := template.Substitute(n.Value, func(k string) (string, bool) {
		x, ok := v.env[k]
		if !ok && k == "COMPOSE_PROJECT_NAME" {
			unknown = k // compose-go sets it once it has read the files
		}
		return x, ok
	})
	if err != nil {
		return "", fmt.Errorf("%s:%d:%d: %s %q: %w: init reads the file only when it can tell which it is; set the variable in .env", file, n.Line, n.Column, what, n.Value, err)
	}
	if unknown != "" {
		return "", fmt.Errorf("%s:%d:%d: %s %q: init cannot tell which file this names before compose has read the project (%s): write the path out", file, n.Line, n.Column, what, n.Value, unknown)
	}
	return out, nil
}

// candidates are the paths a relative path p named in file may be read
// at: joined to each base (the first is compose-go's), to the folder of
// file itself, and with ~ expanded (compose-go does so in some places).
func candidates(file, p string, bases ...string) []string {
	var out []string
	add := func(c string) {
		if !slices.ContainsFunc(out, func(o string) bool { return abs(o) == abs(c) }) {
			out = append(out, c)
		}
	}
	if filepath.IsAbs(p) {
		add(p)
	} else {
		for _, b := range append(bases, filepath.Dir(file)) {
			add(filepath.Join(b, p))
		}
	}
	if rest, ok := strings.CutPrefix(p, "~"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			add(filepath.Join(home, rest))
		}
	}
	return out
}

// joinPath is compose-go's localResourceLoader.abs.
func joinPath(dir, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

// relDir is compose-go's localResourceLoader.Dir: the folder of p (or p,
// when it is one) relative to dir.
func relDir(dir, p string) string {
	path := joinPath(dir, p)
	if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
		path = joinPath(dir, filepath.Dir(p))
	}
	rel, err := filepath.Rel(dir, path)
	if err != nil {
		return path
	}
	return rel
}

func abs(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return filepath.Clean(p)
}

// merged looks one key up in YAML mappings as a decoder reads them, with
// merge keys (<<: *base) applied, and remembers each mapping's answer: a
// file may merge one mapping into thousands, and what the walk costs must
// stay what the file's text does.
type merged struct {
	key  string
	memo map[*yaml.Node]*yaml.Node
}

func newMerged(key string) *merged {
	return &merged{key: key, memo: map[*yaml.Node]*yaml.Node{}}
}

func (l *merged) get(m *yaml.Node) *yaml.Node {
	m = resolveAlias(m)
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	if v, done := l.memo[m]; done {
		return v
	}
	l.memo[m] = nil // a mapping merged into itself finds nothing more
	var found *yaml.Node
	for i := 0; i+1 < len(m.Content) && found == nil; i += 2 {
		if k := m.Content[i]; !isMerge(k) && k.Value == l.key {
			found = m.Content[i+1]
		}
	}
	for i := 0; i+1 < len(m.Content) && found == nil; i += 2 {
		if isMerge(m.Content[i]) {
			found = l.fromMerge(m.Content[i+1])
		}
	}
	l.memo[m] = found
	return found
}

func (l *merged) fromMerge(v *yaml.Node) *yaml.Node {
	v = resolveAlias(v)
	if v != nil && v.Kind == yaml.SequenceNode {
		for _, c := range v.Content {
			if f := l.get(c); f != nil {
				return f
			}
		}
		return nil
	}
	return l.get(v)
}

// lookup is one key of a mapping, merge keys applied.
func lookup(m *yaml.Node, key string) *yaml.Node {
	return newMerged(key).get(m)
}

func isMerge(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && (k.Tag == "!!merge" || k.Value == "<<" && k.Tag != "!!str")
}

// entries are a mapping's key and value pairs, merged ones after its own
// and only where it has no key of that name; each mapping is read once.
func entries(m *yaml.Node) [][2]*yaml.Node {
	var out [][2]*yaml.Node
	have := map[string]bool{}
	seen := map[*yaml.Node]bool{}
	var add func(m *yaml.Node)
	add = func(m *yaml.Node) {
		m = resolveAlias(m)
		if m == nil || seen[m] {
			return
		}
		seen[m] = true
		switch m.Kind {
		case yaml.SequenceNode:
			for _, c := range m.Content {
				add(c)
			}
			return
		case yaml.MappingNode:
		default:
			return
		}
		for i := 0; i+1 < len(m.Content); i += 2 {
			if k := m.Content[i]; !isMerge(k) && !have[k.Value] {
				have[k.Value] = true
				out = append(out, [2]*yaml.Node{k, m.Content[i+1]})
			}
		}
		for i := 0; i+1 < len(m.Content); i += 2 {
			if isMerge(m.Content[i]) {
				add(m.Content[i+1])
			}
		}
	}
	add(m)
	return out
}

package compose

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/compose-spec/compose-go/v2/dotenv"
	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/sirupsen/logrus"
	"go.yaml.in/yaml/v4"

	"github.com/git-binky/git-binky/smallfile"
	"github.com/git-binky/git-binky/world"
)

// source is a compose project as compose itself reads it: the files merged
// (override, include, extends), every profile enabled, interpolated with
// the .env beside it; and the same model uninterpolated, which is where the
// text written to binky.toml comes from, so that no value of .env is copied.
type source struct {
	path   string   // the main compose file
	dir    string   // the project folder
	files  []string // every file read, main first
	dotenv map[string]string
	// dotenvTracked says .env is committed: every worktree has it.
	dotenvTracked bool
	project       *types.Project
	raw           map[string]any // services.NAME.* as written, not interpolated
	// numbers holds how each environment value that YAML reads as a number
	// or a boolean was written (3.10, 0755, yes): compose's model has the
	// number, binky.toml wants the text.
	numbers map[string][]string
	nodes   map[string]*yaml.Node // each file's YAML, for positions
	carried []string              // merge features used (override, include, extends)
}

// quietCompose stops compose-go writing its warnings to our stderr: it logs
// through logrus's standard logger, and init reports what matters itself.
var quietCompose = sync.OnceFunc(func() { logrus.StandardLogger().SetOutput(io.Discard) })

// load reads the compose project whose main file is path; src, when not
// nil, is its content (the file need not exist, as in the fuzz test).
func load(ctx context.Context, path string, src []byte, dotenvVars map[string]string, project string) (*source, error) {
	quietCompose()
	s := &source{path: path, dir: filepath.Dir(path), dotenv: dotenvVars, nodes: map[string]*yaml.Node{}, numbers: map[string][]string{}}
	if src == nil {
		b, err := readComposeFile(path)
		if err != nil {
			return nil, err
		}
		src = b
	}
	main, err := s.shape(path, src)
	if err != nil {
		return nil, err
	}
	files := []types.ConfigFile{{Filename: path, Content: src}}
	s.files = append(s.files, path)
	if o := overrideFile(path); o != "" {
		b, err := readComposeFile(o)
		if err != nil {
			return nil, err
		}
		if _, err := s.shape(o, b); err != nil {
			return nil, err
		}
		files = append(files, types.ConfigFile{Filename: o, Content: b})
		s.files = append(s.files, o)
		s.carried = append(s.carried, "merged "+filepath.Base(o)+" over "+filepath.Base(path)+", as compose does")
	}
	s.noteMerges(main, path)
	for _, f := range files[1:] {
		s.noteMerges(s.nodes[f.Filename], f.Filename)
	}
	// Every file compose-go will read, checked before it reads them.
	docs := map[string][]*yaml.Node{}
	for _, f := range files {
		d, err := documents(f.Filename, f.Content)
		if err != nil {
			return nil, err
		}
		docs[f.Filename] = d
	}
	if err := s.checkReferences(docs); err != nil {
		return nil, err
	}
	env := types.Mapping{}
	for k, v := range dotenvVars {
		env[k] = v // compose-go adds its own variables to the map it is given
	}
	details := types.ConfigDetails{WorkingDir: s.dir, ConfigFiles: files, Environment: env}
	opts := func(o *loader.Options) {
		o.SetProjectName(loader.NormalizeProjectName(project), false)
		o.Profiles = []string{"*"}
		o.SkipResolveEnvironment = true // env_file stays a file: its values are not ours to copy
		o.ResolvePaths = false
		o.SkipResolveLabels = true
	}
	if loader.NormalizeProjectName(project) == "" {
		opts = chain(opts, func(o *loader.Options) { o.SetProjectName("app", false) })
	}
	p, err := loader.LoadWithContext(ctx, details, opts)
	if err != nil {
		return nil, s.composeError(err)
	}
	if len(p.Services) == 0 {
		return nil, fmt.Errorf("%s:1:1: no services: a compose file lists them under a services key", path)
	}
	s.project = p
	raw, err := loader.LoadModelWithContext(ctx, details, opts, func(o *loader.Options) {
		o.SkipInterpolation = true
		o.SkipValidation = true // "${RETRIES}" is not yet the number the schema wants
	})
	if err != nil {
		return nil, s.composeError(err)
	}
	s.raw, _ = raw["services"].(map[string]any)
	return s, nil
}

func chain(fs ...func(*loader.Options)) func(*loader.Options) {
	return func(o *loader.Options) {
		for _, f := range fs {
			f(o)
		}
	}
}

// overrideFile is the override compose reads beside the main file by
// default: docker-compose.override.yml beside docker-compose.yml.
func overrideFile(path string) string {
	base := filepath.Base(path)
	stem := strings.TrimSuffix(strings.TrimSuffix(base, filepath.Ext(base)), ".override")
	if stem+filepath.Ext(base) != base {
		return "" // this is an override itself
	}
	for _, ext := range []string{".yml", ".yaml"} {
		o := filepath.Join(filepath.Dir(path), stem+".override"+ext)
		if fi, err := os.Stat(o); err == nil && fi.Mode().IsRegular() {
			return o
		}
	}
	return ""
}

// shape parses one compose file as YAML and checks the shape init relies
// on, with the line and column of what is wrong: compose-go's own errors
// have none, and a malformed file must never be a panic or a silent skip.
func (s *source) shape(path string, src []byte) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, yamlError(path, err)
	}
	s.nodes[path] = &doc
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, fmt.Errorf("%s:1:1: the file is empty: a compose file is a mapping with a services key", path)
	}
	top := doc.Content[0]
	if top.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d:%d: a compose file is a mapping (services: ...), not a %s", path, top.Line, top.Column, kindName(top))
	}
	services := mapValue(top, "services")
	if services == nil {
		return &doc, nil // an override or include may add services; compose-go says if none
	}
	services = resolveAlias(services)
	if services.Kind == yaml.ScalarNode && services.Tag == "!!null" {
		return &doc, nil
	}
	if services.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d:%d: services is a %s: compose wants a mapping of names to services (services:\\n  web:\\n    image: ...)", path, services.Line, services.Column, kindName(services))
	}
	for i := 0; i+1 < len(services.Content); i += 2 {
		k, v := services.Content[i], resolveAlias(services.Content[i+1])
		if v.Kind != yaml.MappingNode {
			what := kindName(v)
			if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
				what = "empty"
			}
			return nil, fmt.Errorf("%s:%d:%d: service %q is %s: a service is a mapping (image: ..., build: ..., command: ...)", path, k.Line, k.Column, k.Value, article(what))
		}
	}
	return &doc, nil
}

func article(what string) string {
	if what == "empty" {
		return what
	}
	if strings.IndexByte("aeiou", what[0]) >= 0 {
		return "an " + what
	}
	return "a " + what
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "list"
	case yaml.MappingNode:
		return "mapping"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "null"
		}
		return "scalar (" + strings.TrimPrefix(n.Tag, "!!") + ")"
	}
	return "value"
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 16; i++ {
		n = n.Alias
	}
	return n
}

func mapValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// noteMerges records include and extends (which compose-go applies) for
// the summary, and the written text of every number in an environment.
func (s *source) noteMerges(doc *yaml.Node, path string) {
	if doc == nil || len(doc.Content) == 0 {
		return
	}
	top := doc.Content[0]
	if incs := includes(top); len(incs) > 0 {
		var names []string
		for _, inc := range incs {
			for _, p := range inc.paths {
				names = append(names, p.Value)
			}
		}
		s.carried = append(s.carried, fmt.Sprintf("included %s (from %s), as compose does", strings.Join(names, ", "), filepath.Base(path)))
	}
	if svcs := resolveAlias(mapValue(top, "services")); svcs != nil && svcs.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(svcs.Content); i += 2 {
			ext := resolveAlias(mapValue(resolveAlias(svcs.Content[i+1]), "extends"))
			if ext == nil {
				continue
			}
			from := ext.Value
			if ext.Kind == yaml.MappingNode {
				from = scalar(mapValue(ext, "service"))
				if f := scalar(mapValue(ext, "file")); f != "" {
					from += " of " + f
				}
			}
			s.carried = append(s.carried, fmt.Sprintf("service %s extends %s: merged, as compose does", svcs.Content[i].Value, from))
		}
	}
	s.collectNumbers(top, 0, map[*yaml.Node]bool{})
}

func scalar(n *yaml.Node) string {
	n = resolveAlias(n)
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}

// collectNumbers remembers, for every environment mapping in the file, how
// non-string values were written. It reads each mapping once, however many
// services name it by alias (seen): the cost is the file's text, not what
// its aliases expand to.
func (s *source) collectNumbers(n *yaml.Node, depth int, seen map[*yaml.Node]bool) {
	if n == nil || depth > 64 || n.Kind == yaml.AliasNode {
		return
	}
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], resolveAlias(n.Content[i+1])
			if k.Value == "environment" && v != nil && v.Kind == yaml.MappingNode && !seen[v] {
				seen[v] = true
				for j := 0; j+1 < len(v.Content); j += 2 {
					val := resolveAlias(v.Content[j+1])
					if val != nil && val.Kind == yaml.ScalarNode && val.Tag != "!!str" && val.Tag != "!!null" {
						s.numbers[v.Content[j].Value] = append(s.numbers[v.Content[j].Value], val.Value)
					}
				}
			}
		}
	}
	for _, c := range n.Content {
		s.collectNumbers(c, depth+1, seen)
	}
}

// written returns how the environment value v of key was written in the
// YAML, when YAML read it as a number or boolean.
func (s *source) written(key string, v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	}
	want := fmt.Sprint(v)
	for _, text := range s.numbers[key] {
		var got any
		if yaml.Unmarshal([]byte(text), &got) == nil && fmt.Sprint(got) == want {
			return text
		}
	}
	return want
}

var yamlPos = regexp.MustCompile(`^.*line (\d+)(?:, column (\d+))?: (.*)$`)

// yamlError gives a YAML syntax error as file:line:column: message.
func yamlError(path string, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if m := yamlPos.FindStringSubmatch(msg); m != nil {
		col := m[2]
		if col == "" {
			col = "1"
		}
		return fmt.Errorf("%s:%s:%s: %s (the file is not valid YAML)", path, m[1], col, m[3])
	}
	return fmt.Errorf("%s:1:1: %s (the file is not valid YAML)", path, msg)
}

var composePath = regexp.MustCompile(`\b(services|volumes|networks|secrets|configs|include)((?:\.[A-Za-z0-9_.\-\[\]]+)?)`)

// composeError places a compose-go error (which names a path such as
// services.web.ports) at that path's line and column in the file holding it.
func (s *source) composeError(err error) error {
	msg := err.Error()
	if m := composePath.FindStringSubmatch(msg); m != nil {
		keys := append([]string{m[1]}, strings.Split(strings.Trim(m[2], "."), ".")...)
		for _, f := range s.files {
			if line, col, ok := locate(s.nodes[f], keys); ok {
				return fmt.Errorf("%s:%d:%d: %w", f, line, col, err)
			}
		}
	}
	return fmt.Errorf("%s: %w", s.path, err)
}

// locate finds the deepest node along keys (list indexes as numbers).
func locate(doc *yaml.Node, keys []string) (int, int, bool) {
	if doc == nil || len(doc.Content) == 0 {
		return 0, 0, false
	}
	n := doc.Content[0]
	line, col, found := 0, 0, false
	for _, k := range keys {
		if k == "" {
			break
		}
		n = resolveAlias(n)
		var next *yaml.Node
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == k {
					line, col, found = n.Content[i].Line, n.Content[i].Column, true
					next = n.Content[i+1]
				}
			}
		case yaml.SequenceNode:
			if i, err := strconv.Atoi(k); err == nil && i >= 0 && i < len(n.Content) {
				next = n.Content[i]
				line, col, found = next.Line, next.Column, true
			}
		}
		if next == nil {
			break
		}
		n = next
	}
	return line, col, found
}

// readDotenv reads the .env beside the compose file with compose's own
// parser; a missing file is no variables.
func readDotenv(path string) (map[string]string, error) {
	// A regular file of a bounded size only: a repository may commit .env
	// as a link to /dev/zero (init ran out of memory) or put a FIFO there
	// (init hung past Ctrl-C).
	b, err := smallfile.Read(path, world.MaxEnvFileSize)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	m, err := dotenv.UnmarshalBytesWithLookup(b, func(string) (string, bool) { return "", false })
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return m, nil
}

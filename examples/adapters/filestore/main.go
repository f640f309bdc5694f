// Command binky-adapter-filestore is a complete external git-binky adapter:
// each world gets a folder of its own under a shared root. Put it on PATH as
// binky-adapter-filestore and use it with adapter = "filestore".
//
// The protocol: the verb is argv[1] (provision, resolve, teardown,
// capabilities, list); the request is JSON on stdin,
// {"slice": ..., "world": ..., "home": ..., "config": {...}}; the answer is
// JSON on stdout, {"ok": true, "address": ...} or {"ok": false, "error": ...,
// "code": ...}, where code "taken" says the name belongs to someone else
// (binky then tries a salted name) and "not_ours" that teardown left it
// alone. list answers {"slices": {name: {"world": ..., "home": ...}}}.
// A slice is a world's only when its mark names both its world and home.
// The root is config.root, else $BINKY_FILESTORE_ROOT, else
// $TMPDIR/binky-filestore.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

type request struct {
	Slice  string         `json:"slice"`
	World  string         `json:"world"`
	Home   string         `json:"home"`
	Config map[string]any `json:"config"`
}

// owner is who a mark names.
type owner struct {
	World string `json:"world"`
	Home  string `json:"home"`
}

// mark is the file that says a folder is the world's. An adapter that
// shares its store with worlds would keep it where they cannot write; a
// folder's owner here is the only one who writes it.
const mark = ".binky-world"

// errTaken and errNotOurs are answered with their codes.
var (
	errTaken   = errors.New("belongs to another world")
	errNotOurs = errors.New("is not marked as this world's: left alone")
)

// readMark reads a folder's mark; the first form of it was the world id
// alone, which names no home.
func readMark(dir string) (owner, error) {
	b, err := os.ReadFile(filepath.Join(dir, mark))
	if err != nil {
		return owner{}, err
	}
	var o owner
	if json.Unmarshal(b, &o) != nil || o.World == "" {
		o = owner{World: strings.TrimSpace(string(b))}
	}
	return o, nil
}

func main() {
	if len(os.Args) < 2 {
		answer(nil, errors.New("usage: binky-adapter-filestore provision|resolve|teardown|capabilities|list < request.json"))
		return
	}
	var req request
	if os.Args[1] != "capabilities" {
		if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
			answer(nil, fmt.Errorf("read request: %w", err))
			return
		}
	}
	root := filepath.Join(os.TempDir(), "binky-filestore")
	if r := os.Getenv("BINKY_FILESTORE_ROOT"); r != "" {
		root = r
	}
	if r, ok := req.Config["root"].(string); ok && r != "" {
		root = r
	}
	if os.Args[1] != "capabilities" && os.Args[1] != "list" && (req.Slice == "" || strings.ContainsAny(req.Slice, "/\\.")) {
		answer(nil, fmt.Errorf("slice name %q is not a plain name", req.Slice))
		return
	}
	dir := filepath.Join(root, req.Slice)
	switch os.Args[1] {
	case "provision":
		me := owner{World: req.World, Home: req.Home}
		if o, err := readMark(dir); err == nil {
			if o != me {
				answer(nil, fmt.Errorf("%s %w", dir, errTaken))
				return
			}
			answer(map[string]any{}, nil)
			return
		}
		if _, err := os.Stat(dir); err == nil {
			// A folder binky did not make: never taken over.
			answer(nil, fmt.Errorf("%s exists and has no mark: it %w", dir, errTaken))
			return
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			answer(nil, err)
			return
		}
		b, _ := json.Marshal(me)
		answer(map[string]any{}, os.WriteFile(filepath.Join(dir, mark), b, 0o644))
	case "resolve":
		answer(map[string]any{"address": map[string]string{"url": "file://" + dir, "path": dir, "name": req.Slice}}, nil)
	case "teardown":
		o, err := readMark(dir)
		if _, serr := os.Stat(dir); errors.Is(serr, os.ErrNotExist) {
			answer(map[string]any{}, nil) // nothing there: nothing to do
			return
		}
		if err != nil || o != (owner{World: req.World, Home: req.Home}) {
			answer(nil, fmt.Errorf("%s %w", dir, errNotOurs))
			return
		}
		answer(map[string]any{}, os.RemoveAll(dir))
	case "capabilities":
		answer(map[string]any{"capabilities": map[string]bool{"clone": false, "list": true}}, nil)
	case "list":
		out := map[string]owner{}
		entries, _ := os.ReadDir(root)
		for _, e := range entries {
			if o, err := readMark(filepath.Join(root, e.Name())); err == nil {
				out[e.Name()] = o
			}
		}
		answer(map[string]any{"slices": out}, nil)
	default:
		answer(nil, fmt.Errorf("unknown verb %q", os.Args[1]))
	}
}

func answer(fields map[string]any, err error) {
	if err != nil {
		resp := map[string]any{"ok": false, "error": err.Error()}
		switch {
		case errors.Is(err, errTaken):
			resp["code"] = "taken"
		case errors.Is(err, errNotOurs):
			resp["code"] = "not_ours"
		}
		json.NewEncoder(os.Stdout).Encode(resp)
		os.Exit(1)
	}
	fields["ok"] = true
	json.NewEncoder(os.Stdout).Encode(fields)
}

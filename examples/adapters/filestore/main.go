// Command binky-adapter-filestore is a complete external git-binky adapter:
// each world gets a folder of its own under a shared root. Put it on PATH as
// binky-adapter-filestore and use it with adapter = "filestore".
//
// The protocol: the verb is argv[1] (provision, resolve, teardown,
// capabilities, list); the request is JSON on stdin,
// {"slice": ..., "world": ..., "config": {...}}; the answer is JSON on
// stdout, {"ok": true, "address": ...} or {"ok": false, "error": ...}.
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
	Config map[string]any `json:"config"`
}

// mark is the file that says a folder is the world's.
const mark = ".binky-world"

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
		if b, err := os.ReadFile(filepath.Join(dir, mark)); err == nil {
			if string(b) != req.World {
				answer(nil, fmt.Errorf("%s belongs to another world", dir))
				return
			}
			answer(map[string]any{}, nil)
			return
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			answer(nil, err)
			return
		}
		answer(map[string]any{}, os.WriteFile(filepath.Join(dir, mark), []byte(req.World), 0o644))
	case "resolve":
		answer(map[string]any{"address": map[string]string{"url": "file://" + dir, "path": dir, "name": req.Slice}}, nil)
	case "teardown":
		b, err := os.ReadFile(filepath.Join(dir, mark))
		if errors.Is(err, os.ErrNotExist) {
			answer(map[string]any{}, nil) // nothing there: nothing to do
			return
		}
		if err != nil || string(b) != req.World {
			answer(nil, fmt.Errorf("%s is not marked as this world's: left alone", dir))
			return
		}
		answer(map[string]any{}, os.RemoveAll(dir))
	case "capabilities":
		answer(map[string]any{"capabilities": map[string]bool{"clone": false, "list": true}}, nil)
	case "list":
		out := map[string]string{}
		entries, _ := os.ReadDir(root)
		for _, e := range entries {
			if b, err := os.ReadFile(filepath.Join(root, e.Name(), mark)); err == nil {
				out[e.Name()] = string(b)
			}
		}
		answer(map[string]any{"slices": out}, nil)
	default:
		answer(nil, fmt.Errorf("unknown verb %q", os.Args[1]))
	}
}

func answer(fields map[string]any, err error) {
	if err != nil {
		json.NewEncoder(os.Stdout).Encode(map[string]any{"ok": false, "error": err.Error()})
		os.Exit(1)
	}
	fields["ok"] = true
	json.NewEncoder(os.Stdout).Encode(fields)
}

package external

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-binky/git-binky/adapters"
)

// scripted is an external adapter written in sh: for each verb it saves
// its stdin to <verb>.in and answers with <verb>.out on stdout, <verb>.err
// on stderr and <verb>.code as its exit status, all files of dir.
func scripted(t *testing.T) (*External, string) {
	t.Helper()
	dir := t.TempDir()
	script := `#!/bin/sh
d='` + dir + `'
cat > "$d/$1.in"
[ -f "$d/$1.out" ] && cat "$d/$1.out"
[ -f "$d/$1.err" ] && cat "$d/$1.err" >&2
exit "$(cat "$d/$1.code" 2>/dev/null || echo 0)"
`
	bin := filepath.Join(dir, "binky-adapter-scripted")
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return &External{Name: "scripted", Path: bin}, dir
}

func answer(t *testing.T, dir, verb, stdout, stderr string, code int) {
	t.Helper()
	for ext, content := range map[string]string{".out": stdout, ".err": stderr, ".code": itoa(code)} {
		if err := os.WriteFile(filepath.Join(dir, verb+ext), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

var slice = adapters.Slice{Name: "acme_feat", World: "w1", Home: "h1", Password: "pw", AdminURL: "scripted://admin", Config: map[string]any{"size": "small"}}

func TestTheRequestIsTheSliceOnStdinAndTheVerbInArgv(t *testing.T) {
	e, dir := scripted(t)
	answer(t, dir, "provision", `{"ok": true}`, "", 0)
	if err := e.Provision(context.Background(), slice); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "provision.in"))
	if err != nil {
		t.Fatalf("the adapter was not run with verb provision: %v", err)
	}
	var got request
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("stdin is not JSON: %q", b)
	}
	if got.Slice != "acme_feat" || got.World != "w1" || got.Home != "h1" || got.Password != "pw" || got.AdminURL != "scripted://admin" || got.Config["size"] != "small" {
		t.Errorf("request %+v", got)
	}
	// A slice with no config still sends an object, never null.
	answer(t, dir, "teardown", `{"ok": true}`, "", 0)
	if err := e.Teardown(context.Background(), adapters.Slice{Name: "x"}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "teardown.in")); !strings.Contains(string(b), `"config":{}`) {
		t.Errorf("teardown stdin %s", b)
	}
}

func TestRefusalsCarryTheirCodeAndTheAdaptersWords(t *testing.T) {
	e, dir := scripted(t)
	ctx := context.Background()
	answer(t, dir, "provision", `{"ok": false, "error": "acme_feat exists", "code": "taken"}`, "it has a mark of world w9", 0)
	err := e.Provision(ctx, slice)
	if !errors.Is(err, adapters.ErrTaken) || !strings.Contains(err.Error(), "acme_feat exists") || !strings.Contains(err.Error(), "w9") {
		t.Errorf("taken: %v", err)
	}
	answer(t, dir, "teardown", `{"ok": false, "error": "not binky's", "code": "not_ours"}`, "", 1)
	if err := e.Teardown(ctx, slice); !errors.Is(err, adapters.ErrNotOurs) {
		t.Errorf("not_ours: %v", err)
	}
	answer(t, dir, "provision", `{"ok": false, "error": "disk full"}`, "", 1)
	if err := e.Provision(ctx, slice); err == nil || errors.Is(err, adapters.ErrTaken) || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("plain refusal: %v", err)
	}
}

func TestAnAdapterThatAnswersNoJSONIsAnErrorWithItsStderr(t *testing.T) {
	e, dir := scripted(t)
	ctx := context.Background()
	answer(t, dir, "provision", "", "segfault in libfoo", 139)
	if err := e.Provision(ctx, slice); err == nil || !strings.Contains(err.Error(), "segfault in libfoo") {
		t.Errorf("crash: %v", err)
	}
	answer(t, dir, "provision", "all good!", "", 0)
	if err := e.Provision(ctx, slice); err == nil || !strings.Contains(err.Error(), "printed no JSON answer") {
		t.Errorf("prose: %v", err)
	}
	// An adapter that cannot say its capabilities has none.
	answer(t, dir, "capabilities", "", "", 1)
	if c := e.Capabilities(); c != (adapters.Capabilities{}) {
		t.Errorf("capabilities %+v", c)
	}
}

func TestResolveTakesAURLOrAnObject(t *testing.T) {
	e, dir := scripted(t)
	ctx := context.Background()
	answer(t, dir, "resolve", `{"ok": true, "address": "scripted://acme_feat"}`, "", 0)
	a, err := e.Resolve(ctx, slice)
	if err != nil || a["url"] != "scripted://acme_feat" || a["name"] != "acme_feat" {
		t.Errorf("a URL: %v %v", a, err)
	}
	answer(t, dir, "resolve", `{"ok": true, "address": {"url": "u", "bucket": "b"}}`, "", 0)
	a, err = e.Resolve(ctx, slice)
	if err != nil || a["url"] != "u" || a["bucket"] != "b" {
		t.Errorf("an object: %v %v", a, err)
	}
	answer(t, dir, "resolve", `{"ok": true, "address": 42}`, "", 0)
	if _, err := e.Resolve(ctx, slice); err == nil || !strings.Contains(err.Error(), "URL string or an object") {
		t.Errorf("a number: %v", err)
	}
}

func TestListReadsBothOwnerForms(t *testing.T) {
	e, dir := scripted(t)
	ctx := context.Background()
	answer(t, dir, "list", `{"ok": true, "slices": {"a": {"world": "w1", "home": "h1"}, "b": "w2"}}`, "", 0)
	got, err := e.List(ctx, "scripted://admin")
	if err != nil {
		t.Fatal(err)
	}
	owners := map[string]adapters.Owner{}
	for _, o := range got {
		owners[o.Slice] = o.Owner
	}
	if owners["a"] != (adapters.Owner{World: "w1", Home: "h1"}) || owners["b"] != (adapters.Owner{World: "w2"}) || len(got) != 2 {
		t.Errorf("list: %+v", got)
	}
	answer(t, dir, "list", `{"ok": true, "slices": {"a": {"home": "h1"}}}`, "", 0)
	if _, err := e.List(ctx, ""); err == nil || !strings.Contains(err.Error(), "slice a") {
		t.Errorf("an owner with no world: %v", err)
	}
}

func TestFindNamesTheProgramToInstall(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	if _, err := Find("nosuch"); err == nil || !strings.Contains(err.Error(), "binky-adapter-nosuch") {
		t.Errorf("missing: %v", err)
	}
	e, _ := scripted(t)
	t.Setenv("PATH", filepath.Dir(e.Path))
	if f, err := Find("scripted"); err != nil || f.Path != e.Path {
		t.Errorf("on PATH: %+v %v", f, err)
	}
}

package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The launcher answers env on every shell prompt, and a Go program's start
// grows with each package it links and initialises: it links what reading
// a snapshot needs, and the command line's packages stay in binky.
func TestTheLauncherLinksOnlyWhatASnapshotNeeds(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("skipped: the go tool is not on PATH, so the launcher's imports cannot be listed")
	}
	out, err := exec.Command(gobin, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	forbidden := []string{"github.com/spf13/", "github.com/BurntSushi/", "encoding/json", "net", "crypto/rand",
		"regexp", "text/template", "golang.org/x/", "github.com/git-binky/git-binky/world",
		"github.com/git-binky/git-binky/client", "github.com/git-binky/git-binky/api"}
	for _, pkg := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if pkg == f || strings.HasPrefix(pkg, f) && (strings.HasSuffix(f, "/") || strings.HasPrefix(pkg, f+"/")) {
				t.Errorf("git-binky links %s (matches %q): leave it to binky", pkg, f)
			}
		}
	}
}

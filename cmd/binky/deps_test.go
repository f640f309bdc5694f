package main

import (
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// The CLI runs for every command, and answers env whenever its snapshot
// does not match (the launcher, cmd/git-binky, answers the rest): each
// package it links costs start-up time. Drivers, HTTP and TLS, compose-go and
// go-git belong to binkyd; a change that pulls one in here (as verify once
// did, through supervisor's HTTP health probe) fails this test.
func TestLightCLILinksNoHeavyPackage(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("skipped: the go tool is not on PATH, so the CLI's imports cannot be listed")
	}
	out, err := exec.Command(gobin, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	forbidden := []string{"net/http", "crypto/tls", "crypto/x509", "github.com/jackc/", "github.com/redis/",
		"go.mongodb.org/", "github.com/go-sql-driver/", "github.com/twmb/", "github.com/rabbitmq/",
		"github.com/compose-spec/", "github.com/go-git/", "github.com/git-binky/git-binky/supervisor",
		"github.com/git-binky/git-binky/daemon", "github.com/git-binky/git-binky/adapters/"}
	for _, pkg := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if pkg == f || strings.HasPrefix(pkg, f) && (strings.HasSuffix(f, "/") || strings.HasPrefix(pkg, f+"/")) {
				t.Errorf("binky links %s (matches %q): keep it in binkyd", pkg, f)
			}
		}
	}
}

// Only a command with nothing to clean up may skip the signal context: a
// Ctrl-C of up, logs -f or verify must cancel it, not kill the process.
func TestOnlyEnvLeavesSignalsToTheirDefault(t *testing.T) {
	root := newRootCmd(newApp(strings.NewReader(""), io.Discard, io.Discard))
	var fast []string
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Annotations[annotationFast] != "" {
			fast = append(fast, c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	if len(fast) != 1 || fast[0] != "git-binky env" {
		t.Fatalf("commands without a signal context: %v, want only git-binky env", fast)
	}
}

// A text/template anywhere in the CLI (cobra's Set*Template included) makes
// reflect.Value.MethodByName reachable, and the linker then keeps every
// exported method of every type: 2 MB more binary to map at each start.
func TestLightCLIKeepsDeadMethodsOut(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("skipped: the go tool is not on PATH, so the CLI's symbols cannot be listed")
	}
	out, err := exec.Command(gobin, "tool", "nm", filepath.Join(binDir, "binky")).Output()
	if err != nil {
		t.Fatalf("go tool nm: %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && (f[len(f)-1] == "reflect.Value.MethodByName" || f[len(f)-1] == "reflect.Value.Method") {
			t.Errorf("binky links %s: a template (or other reflection by method name) reached the CLI", f[len(f)-1])
		}
	}
}

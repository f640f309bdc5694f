// Command binkyd is the git-binky daemon, and the home of the commands that
// need what only it links (net/http, mcp-go, the compose loader): 'run'
// serves the daemon (git-binky starts it on demand), 'mcp' is the MCP stdio
// server behind 'git binky mcp', 'curl' is behind 'git binky curl', and
// 'init' behind 'git binky init', and 'servers' lists or stops binky's own
// servers for 'git binky servers' when no daemon runs. It is a binary of
// its own so that git-binky, which shell prompts run on every cd, does not
// pay their start-up cost.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/git-binky/git-binky/api"
	"github.com/git-binky/git-binky/client"
	"github.com/git-binky/git-binky/compose"
	"github.com/git-binky/git-binky/daemon"
	"github.com/git-binky/git-binky/mcpserver"
	"github.com/git-binky/git-binky/procgroup"
	"github.com/git-binky/git-binky/proxy"
	"github.com/git-binky/git-binky/version"
	"github.com/git-binky/git-binky/world"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

const usage = "usage: binkyd run | mcp | curl ... | init ... | servers ...   (git-binky runs these for you)"

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	home, err := world.DefaultHome()
	if err != nil {
		fmt.Fprintln(stderr, "binkyd:", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch args[0] {
	case "run":
		// Not a mark of a world's service this daemon was started from
		// (the client seals them; one started by hand does not): every
		// service it starts would inherit it.
		procgroup.DropInheritedMarks()
		// The first signal stops it as 'daemon stop' does, finishing the
		// ups under way; a second ends it at once, as a kill would (the
		// next daemon ends what it cut off).
		context.AfterFunc(ctx, stop)
		return runDaemon(ctx, home, stderr)
	case "mcp":
		return runMCP(ctx, home, stdin, stdout, stderr)
	case "curl":
		return runCurl(ctx, args[1:], stdout, stderr)
	case "init":
		return runInit(ctx, args[1:], stdout, stderr)
	case "servers":
		return runServers(ctx, home, args[1:], stdout)
	}
	fmt.Fprintln(stderr, usage)
	return 2
}

func runDaemon(ctx context.Context, home world.Home, stderr io.Writer) int {
	if err := home.Ensure(); err != nil {
		fmt.Fprintln(stderr, "binkyd:", err)
		return 1
	}
	logf, err := os.OpenFile(home.LogPath(), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		fmt.Fprintln(stderr, "binkyd:", err)
		return 1
	}
	defer logf.Close()
	log := slog.New(slog.NewJSONHandler(logf, nil))
	// A service's output must never reach us: we have no terminal.
	signal.Ignore(syscall.SIGHUP, syscall.SIGPIPE)
	err = daemon.New(home, version.String(), log).Run(ctx)
	if errors.Is(err, daemon.ErrRunning) {
		return 0 // another daemon won the race to start; it serves
	}
	if err != nil {
		log.Error("daemon failed", "err", err)
		fmt.Fprintln(stderr, "binkyd:", err)
		return 1
	}
	return 0
}

func runMCP(ctx context.Context, home world.Home, stdin io.Reader, stdout, stderr io.Writer) int {
	dir, err := os.Getwd()
	if err != nil {
		dir = "/"
	}
	s := &mcpserver.Server{Client: client.New(home, version.String()), Home: home, Dir: dir, Version: version.String(), Env: world.WithoutGitExecPath(os.Environ())}
	if d, err := time.ParseDuration(os.Getenv("BINKY_MCP_HEARTBEAT")); err == nil && d > 0 {
		s.Heartbeat = d // tests shorten it; agents keep the default
	}
	if err := s.Serve(ctx, stdin, stdout); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		fmt.Fprintln(stderr, "git binky mcp:", err)
		return 1
	}
	return 0
}

// headers collects repeated -H flags.
type headers []string

func (h *headers) String() string     { return fmt.Sprint(*h) }
func (h *headers) Set(v string) error { *h = append(*h, v); return nil }

func runCurl(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("curl", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var r proxy.CurlRequest
	var hs headers
	fs.IntVar(&r.ProxyPort, "proxy-port", 0, "")
	fs.StringVar(&r.Host, "host", "", "")
	fs.StringVar(&r.Path, "path", "/", "")
	fs.StringVar(&r.Method, "X", "", "")
	fs.StringVar(&r.Data, "d", "", "")
	fs.Var(&hs, "H", "")
	fs.BoolVar(&r.Include, "i", false, "")
	fs.BoolVar(&r.Fail, "f", false, "")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	r.Headers = hs
	// Credentials come through the environment, which other users cannot
	// read, never argv, which ps shows to everyone.
	r.User = os.Getenv("BINKY_CURL_USER")
	code, err := proxy.Curl(ctx, r, stdout)
	if err != nil {
		fmt.Fprintln(stderr, "git-binky: curl:", err)
		return 1
	}
	if r.Fail && code >= 400 {
		fmt.Fprintf(stderr, "git-binky: curl: the service answered HTTP %d\n", code)
		return 22 // curl's own code for -f on an HTTP error
	}
	return 0
}

func runInit(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("init", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var opts compose.Options
	fs.BoolVar(&opts.Force, "force", false, "")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: binkyd init [-force] DIR")
		return 2
	}
	opts.Dir = fs.Arg(0)
	out, res, err := compose.Init(ctx, opts)
	if err != nil {
		fmt.Fprintln(stderr, "git-binky: init:", err)
		return 1
	}
	compose.WriteSummary(stdout, out, res)
	return 0
}

// runServers is `binkyd servers [stop] [KIND]`: the client's way to list
// or stop binky's own servers when no daemon runs, answering on stdout
// with one message as the daemon answers on its socket.
func runServers(ctx context.Context, home world.Home, args []string, stdout io.Writer) int {
	var req api.Request
	if len(args) > 0 {
		req.Action = args[0]
	}
	if len(args) > 1 {
		req.Name = args[1]
	}
	// A stop is logged where the daemon's would be, if the home has a log.
	var logw io.Writer = io.Discard
	if f, err := os.OpenFile(home.LogPath(), os.O_WRONLY|os.O_APPEND, 0); err == nil {
		defer f.Close()
		logw = f
	}
	log := slog.New(slog.NewJSONHandler(logw, nil)).With("by", "binkyd servers, no daemon running")
	var m api.Message
	res, err := daemon.ServersWithoutDaemon(ctx, home, log, req)
	if err == nil {
		m.Result, err = json.Marshal(res)
	}
	if err != nil {
		ae := &api.Error{Message: err.Error()}
		errors.As(err, &ae)
		m.Error = ae
	}
	if err := json.NewEncoder(stdout).Encode(m); err != nil || m.Error != nil {
		return 1
	}
	return 0
}

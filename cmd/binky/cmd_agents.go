package main

import (
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/git-binky/git-binky/client"
	"github.com/git-binky/git-binky/world"
)

func newMCPCmd(app *App) *cobra.Command {
	return &cobra.Command{
		Use:   "mcp",
		Short: "Run the MCP stdio server, so agents call up/down/status/env/verify/logs as tools",
		Long: `Run git-binky's MCP server on stdin/stdout. Wire it into a client with:

  claude mcp add binky -- git binky mcp

or, in any client's config:

  { "mcpServers": { "binky": { "command": "git", "args": ["binky", "mcp"] } } }

See AGENTS.md for the tools.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return client.ExecDaemonBinary("mcp")
		},
	}
}

type curlOptions struct {
	Method, Data  string
	User          string
	Headers       []string
	Include, Fail bool
	Name, Service string
	Path          string
}

func newCurlCmd(app *App) *cobra.Command {
	var opts curlOptions
	cmd := &cobra.Command{
		Use:   "curl <name> <service> [path]",
		Short: "Call a service through the proxy, with the Host header filled in (redirects not followed)",
		Args:  cobra.RangeArgs(2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name, opts.Service = args[0], args[1]
			if len(args) == 3 {
				opts.Path = args[2]
			}
			home, err := app.Home()
			if err != nil {
				return err
			}
			w, _, err := world.OpenApproved(home, app.Dir, opts.Name)
			if err != nil {
				return err
			}
			host, err := w.ServiceHost(opts.Service)
			if err != nil {
				return usageError{err}
			}
			// The proxy is the daemon's: started if it is not, as every
			// command that needs it is.
			c, err := app.Client()
			if err != nil {
				return err
			}
			if _, err := c.Start(cmd.Context()); err != nil {
				return err
			}
			argv := []string{"-proxy-port", strconv.Itoa(w.ProxyPort), "-host", host, "-path", opts.Path}
			if opts.Method != "" {
				argv = append(argv, "-X", opts.Method)
			}
			if opts.Data != "" {
				argv = append(argv, "-d", opts.Data)
			}
			if opts.User != "" {
				// Through the environment: argv is visible in ps.
				if err := os.Setenv("BINKY_CURL_USER", opts.User); err != nil {
					return err
				}
			}
			for _, h := range opts.Headers {
				argv = append(argv, "-H", h)
			}
			if opts.Include {
				argv = append(argv, "-i")
			}
			if opts.Fail {
				argv = append(argv, "-f")
			}
			// The request is made by binkyd, which links net/http; this
			// binary stays small for the shell-prompt commands.
			return client.ExecDaemonBinary("curl", argv...)
		},
	}
	cmd.Flags().StringVarP(&opts.Method, "request", "X", "", "HTTP method (default GET, or POST with -d)")
	cmd.Flags().StringVarP(&opts.Data, "data", "d", "", "request body")
	cmd.Flags().StringVarP(&opts.User, "user", "u", "", "basic auth, \"user:password\"")
	cmd.Flags().StringArrayVarP(&opts.Headers, "header", "H", nil, "extra header, \"Name: value\" (repeatable)")
	cmd.Flags().BoolVarP(&opts.Include, "include", "i", false, "print the status line and headers")
	cmd.Flags().BoolVarP(&opts.Fail, "fail", "f", false, "exit 22 on an HTTP error, printing no body")
	return cmd
}

package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/git-binky/git-binky/adapters"
	"github.com/git-binky/git-binky/api"
	"github.com/git-binky/git-binky/world"
)

func newServersCmd(app *App) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "servers [stop|start] [kind]",
		Short: "List, stop or start the shared servers binky runs itself (the managed default)",
		Long: `With no admin_url, binky runs one shared server per kind for the whole
machine under $BINKY_HOME/servers/ (Postgres, Redis, ...), and every world's
slice is carved from it. 'servers' lists them; 'servers stop [kind]' stops one
(or all), keeping its data, so every slice is still there when it starts again;
'servers start [kind]' starts it again (a world that needs it also does).
Worlds running on a server you stop lose their connections. Listing and
stopping start no daemon: with none running, binky finds its servers from
their pid files, as the daemon does.

  git binky servers
  git binky servers stop postgres
  git binky servers start`,
		Args: cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var action, kind string
			if len(args) > 0 {
				switch args[0] {
				case "stop", "start":
					action = args[0]
				default:
					return usageError{fmt.Errorf("unknown action %q: stop or start (no action lists the servers)", args[0])}
				}
			}
			if len(args) == 2 {
				kind = args[1]
			}
			c, err := app.Client()
			if err != nil {
				return err
			}
			res, err := c.Servers(cmd.Context(), app.Dir, action, kind)
			if err != nil {
				return err
			}
			if asJSON {
				return app.WriteJSON(res)
			}
			if len(res) == 0 {
				fmt.Fprintln(app.Out, "no shared servers yet: binky starts one when a world's slice needs it")
				return nil
			}
			for _, s := range res {
				state := "stopped"
				if s.Running {
					state = fmt.Sprintf("running on 127.0.0.1:%d", s.Port)
				}
				fmt.Fprintf(app.Out, "%-10s  %s  %s\n", s.Kind, state, s.Where())
				if len(s.Worlds) == 0 {
					continue
				}
				names := world.Inert(strings.Join(s.Worlds, ", "))
				if action == "stop" && !s.Running && (kind == "" || s.Kind == kindNamed(kind, res)) {
					fmt.Fprintf(app.Err, "warning: %d world(s) with running services use the %s server you stopped (%s): their services lost their connections; 'git binky servers start %s' (or their next up) starts it again\n",
						len(s.Worlds), s.Kind, names, s.Kind)
				} else {
					fmt.Fprintf(app.Out, "%-10s  used by %s\n", "", names)
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the servers as JSON")
	return cmd
}

// kindNamed is the kind name (as the user wrote it: "postgresql" too)
// names among the servers listed (res).
func kindNamed(name string, res []api.Server) string {
	for _, s := range res {
		if strings.EqualFold(s.Kind, name) {
			return s.Kind
		}
	}
	if k, ok := adapters.Lookup(name); ok {
		return k.Name
	}
	return name
}

func newGoldenCmd(app *App) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "golden [drop NAME]",
		Short: "List the golden templates worlds are cloned from, or drop one",
		Long: `A service with clone_from = "golden" is cloned from a template built once
(provision, migrate, seed), named from a hash of its migrate and seed commands
(and of the files golden_key names). 'golden' lists this home's templates;
'golden drop NAME' drops one from its server (only if it is marked as this
home's golden template) so that the next 'up' builds it again. Worlds already
cloned from it keep their own copies. On binky's own PostgreSQL, the list also
holds a blank template: template1's copy, whose prepared spares plain worlds
(no clone_from) take instead of copying template1 while their up waits.`,
		Args: cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := api.Request{Op: api.OpGolden, Dir: app.Dir}
			switch {
			case len(args) == 0:
			case args[0] == "drop" && len(args) == 2:
				req.Action, req.Name = "drop", args[1]
			default:
				return usageError{fmt.Errorf("usage: git binky golden [drop NAME] ('git binky golden' lists the names)")}
			}
			c, err := app.Client()
			if err != nil {
				return err
			}
			req.Env = c.Env
			var res []api.Golden
			if err := c.Call(cmd.Context(), req, nil, &res); err != nil {
				return err
			}
			if asJSON {
				return app.WriteJSON(res)
			}
			if req.Action == "drop" {
				fmt.Fprintf(app.Out, "dropped golden template %s: the next up builds it again\n", req.Name)
				return nil
			}
			if len(res) == 0 {
				fmt.Fprintln(app.Out, "no golden templates: a service with clone_from = \"golden\" builds one on its first up")
				return nil
			}
			for _, g := range res {
				what := "project " + g.Project
				if g.Blank {
					what = "blank (template1's copy, for plain worlds)"
				}
				fmt.Fprintf(app.Out, "%s  %s  %s  built %s\n", g.Name, g.Adapter, what, g.Built.Local().Format("2006-01-02 15:04"))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the templates as JSON")
	return cmd
}

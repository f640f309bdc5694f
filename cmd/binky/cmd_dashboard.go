package main

import (
	"bytes"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/git-binky/git-binky/api"
)

func newDashboardCmd(app *App) *cobra.Command {
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "dashboard [--interval 1s]",
		Short: "Live view of every world, redrawn in place until Ctrl-C",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := app.Client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			tty := app.IsStdoutTTY()
			if tty {
				fmt.Fprint(app.Out, "\033[?1049h\033[?25l") // alternate screen, no cursor
				defer fmt.Fprint(app.Out, "\033[?25h\033[?1049l")
			}
			st := app.Style()
			for {
				s, err := c.Status(ctx, app.Dir, false)
				if err != nil {
					if ctx.Err() != nil {
						return nil
					}
					return err
				}
				var m api.Metrics
				_ = c.Call(ctx, api.Request{Op: api.OpMetrics}, nil, &m)
				var buf bytes.Buffer
				fmt.Fprintf(&buf, "%s  git binky dashboard — %d worlds, %d queued, daemon pid %d, %.0f MiB   (Ctrl-C to quit)\n\n",
					time.Now().Format("15:04:05"), len(s.Worlds), m.QueueLength, s.Daemon.PID, float64(m.Daemon.RSSBytes)/(1<<20))
				renderStatus(&buf, s, st)
				if tty {
					fmt.Fprint(app.Out, "\033[H\033[2J")
				}
				app.Out.Write(buf.Bytes())
				if !tty {
					return nil // a pipe gets one frame
				}
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(interval):
				}
			}
		},
	}
	cmd.Flags().DurationVar(&interval, "interval", time.Second, "how often to redraw")
	return cmd
}

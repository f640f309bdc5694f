package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/git-binky/git-binky/world"
)

type portOptions struct {
	Proxy, HTTPS int
	TLS          string
}

func newPortCmd(app *App) *cobra.Command {
	var opts portOptions
	cmd := &cobra.Command{
		Use:   "port [--proxy P] [--https P] [--tls on|off]",
		Short: "Show or set the proxy's ports (and https through Caddy)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := app.Home()
			if err != nil {
				return err
			}
			changed := cmd.Flags().Changed("proxy") || cmd.Flags().Changed("https") || cmd.Flags().Changed("tls")
			s, err := home.UpdateSettings(func(s *world.Settings) error {
				if cmd.Flags().Changed("proxy") {
					s.ProxyPort = opts.Proxy
				}
				if cmd.Flags().Changed("https") {
					s.HTTPSPort = opts.HTTPS
				}
				switch opts.TLS {
				case "":
				case "on":
					s.HTTPS = true
				case "off":
					s.HTTPS = false
				default:
					return usageError{fmt.Errorf("--tls %q: use on or off", opts.TLS)}
				}
				return nil
			}, !changed)
			if err != nil {
				return err
			}
			https := "off"
			if s.HTTPS {
				https = fmt.Sprintf("on, port %d (Caddy)", s.HTTPSPort)
			}
			fmt.Fprintf(app.Out, "proxy: 127.0.0.1:%d\nhttps: %s\n", s.ProxyPort, https)
			if changed {
				return restartDaemon(cmd, app)
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&opts.Proxy, "proxy", 0, "the proxy's port on loopback (1-65535)")
	cmd.Flags().IntVar(&opts.HTTPS, "https", 0, "the https port Caddy listens on (1-65535)")
	cmd.Flags().StringVar(&opts.TLS, "tls", "", "front the proxy with Caddy's https: on or off")
	return cmd
}

// restartDaemon replaces a running daemon so new settings take effect; its
// services keep running and the new daemon adopts them.
func restartDaemon(cmd *cobra.Command, app *App) error {
	c, err := app.Client()
	if err != nil {
		return err
	}
	if !c.Running(cmd.Context()) {
		return nil
	}
	if err := c.Shutdown(cmd.Context()); err != nil {
		return err
	}
	if _, err := c.Start(cmd.Context()); err != nil {
		return err
	}
	fmt.Fprintln(app.Out, "daemon restarted with the new settings (services kept running)")
	return nil
}

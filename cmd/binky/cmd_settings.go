package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/git-binky/git-binky/world"
)

type reserveOptions struct {
	RAM         string
	Disk        float64
	MaxParallel int
}

func newReserveCmd(app *App) *cobra.Command {
	var opts reserveOptions
	cmd := &cobra.Command{
		Use:   "reserve [--ram N%] [--disk GB] [--max-parallel N]",
		Short: "Set how much RAM and disk binky always keeps free (and how many worlds may run)",
		Long: `Admission starts a world only while fewer than max_parallel run and the
machine keeps these reserves free; under memory pressure later it suspends the
newest world and resumes it when room returns.

  git binky reserve --ram 20% --disk 10    # keep 20% of RAM and 10 GB of disk free`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := app.Home()
			if err != nil {
				return err
			}
			s, err := home.UpdateSettings(func(s *world.Settings) error {
				if cmd.Flags().Changed("ram") {
					pct, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(opts.RAM), "%"), 64)
					if err != nil {
						return usageError{fmt.Errorf("--ram %q: give a percentage of RAM, like 20%%", opts.RAM)}
					}
					s.Reserve.RAMPercent = pct
				}
				if cmd.Flags().Changed("disk") {
					s.Reserve.DiskGB = opts.Disk
				}
				if cmd.Flags().Changed("max-parallel") {
					s.MaxParallel = opts.MaxParallel
				}
				return nil
			}, !(cmd.Flags().Changed("ram") || cmd.Flags().Changed("disk") || cmd.Flags().Changed("max-parallel")))
			if err != nil {
				return err
			}
			fmt.Fprintf(app.Out, "reserve: %g%% of RAM, %g GB of disk; max_parallel %d\n", s.Reserve.RAMPercent, s.Reserve.DiskGB, s.MaxParallel)
			return nil
		},
	}
	cmd.Flags().StringVar(&opts.RAM, "ram", "", "RAM to keep free, as a percentage of the machine's (0-95%)")
	cmd.Flags().Float64Var(&opts.Disk, "disk", 0, "disk to keep free, in GB")
	cmd.Flags().IntVar(&opts.MaxParallel, "max-parallel", 0, "how many worlds may run at once (1-1000)")
	return cmd
}

func newConfigCmd(app *App) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show the machine settings: reserves, proxy ports, port range, max_parallel",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := app.Home()
			if err != nil {
				return err
			}
			s, err := home.LoadSettings()
			if err != nil {
				return err
			}
			if asJSON {
				return app.WriteJSON(s)
			}
			https := "off"
			if s.HTTPS {
				https = fmt.Sprintf("on, port %d (Caddy)", s.HTTPSPort)
			}
			fmt.Fprintf(app.Out, "settings:     %s\n", home.SettingsPath())
			fmt.Fprintf(app.Out, "reserve:      %g%% of RAM, %g GB of disk kept free\n", s.Reserve.RAMPercent, s.Reserve.DiskGB)
			fmt.Fprintf(app.Out, "max_parallel: %d worlds running at once\n", s.MaxParallel)
			fmt.Fprintf(app.Out, "ports:        %d-%d\n", s.Ports.Min, s.Ports.Max)
			fmt.Fprintf(app.Out, "proxy:        127.0.0.1:%d\n", s.ProxyPort)
			fmt.Fprintf(app.Out, "https:        %s\n", https)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

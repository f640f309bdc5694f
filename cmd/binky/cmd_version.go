package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/git-binky/git-binky/version"
)

func newVersionCmd(app *App) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(app.Out, "git-binky version %s\n", version.String())
			return err
		},
	}
}

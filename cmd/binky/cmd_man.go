//go:build manpage

package main

import (
	"github.com/spf13/cobra"

	"github.com/git-binky/git-binky/cmd/binky/manpage"
)

// newManCmd is `git-binky man <dir>`, in the installer's build only (go run
// -tags manpage ./cmd/binky man DIR, from make install): it writes the
// manual pages generated from this command tree.
func newManCmd(app *App) *cobra.Command {
	return &cobra.Command{
		Use:    "man <dir>",
		Short:  "Write the manual pages (git-binky.1, git-binky-up.1, ...) into dir",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			root := newRootCmd(app)
			for _, c := range root.Commands() {
				if c.Name() == "man" {
					root.RemoveCommand(c)
				}
			}
			return manpage.Write(root, args[0])
		},
	}
}

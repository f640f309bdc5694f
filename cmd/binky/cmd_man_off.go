//go:build !manpage

package main

import "github.com/spf13/cobra"

// newManCmd is nil in the git-binky people run: the man page generator
// (cobra/doc, a Markdown renderer) stays out of the binary shell prompts
// start. make install builds it with -tags manpage.
func newManCmd(*App) *cobra.Command { return nil }

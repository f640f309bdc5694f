// Package manpage writes git-binky's manual pages from its cobra command
// tree (one page per command: git-binky.1, git-binky-up.1, ...), so that
// `git binky --help`, which git turns into `man git-binky`, opens binky's
// manual as it does git's own. It is linked only into the installer's
// build (go run -tags manpage) and the tests, not into the git-binky that
// shell prompts run.
package manpage

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// Write generates one page per command of root into dir.
func Write(root *cobra.Command, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("man pages: %w", err)
	}
	root.DisableAutoGenTag = true // the same pages from the same tree, whatever the date
	header := &doc.GenManHeader{Title: "GIT-BINKY", Section: "1", Source: "git-binky", Manual: "git-binky manual"}
	if err := doc.GenManTree(root, header, dir); err != nil {
		return fmt.Errorf("man pages into %s: %w", dir, err)
	}
	return nil
}

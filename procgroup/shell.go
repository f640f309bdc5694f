package procgroup

import (
	"context"
	"os/exec"
)

// Command returns a command that runs line with `sh -c` (shell_<os>.go
// says which sh) as the leader of a new process group, and that kills the
// whole group, not only the shell, when ctx is done. Every command line binky
// runs from a binky.toml goes through it, so they all run the same way. When
// no shell is found, the command's Start returns that error.
func Command(ctx context.Context, line string) *exec.Cmd {
	sh, err := shell()
	if err != nil {
		cmd := exec.CommandContext(ctx, "sh", "-c", line)
		cmd.Err = err
		return cmd
	}
	cmd := exec.CommandContext(ctx, sh, "-c", line)
	Set(cmd)
	cmd.Cancel = func() error { return kill(cmd) }
	return cmd
}

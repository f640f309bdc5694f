//go:build !linux

package procgroup

import "os/exec"

// DieWithParent does nothing here: only Linux kills a child when its
// parent dies (PR_SET_PDEATHSIG).
func DieWithParent(cmd *exec.Cmd) {}

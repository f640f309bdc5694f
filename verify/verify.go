// Package verify runs a project's [agents] verify checks in a worktree,
// with the world's environment, and reports which passed.
package verify

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"time"

	"github.com/git-binky/git-binky/logfile"
	"github.com/git-binky/git-binky/procgroup"
	"github.com/git-binky/git-binky/world"
)

// Check is the outcome of one verify command.
type Check struct {
	Cmd      string  `json:"cmd"`
	Passed   bool    `json:"passed"`
	ExitCode int     `json:"exit_code"`
	Seconds  float64 `json:"seconds"`
	// Output is the command's last output (stdout and stderr), at most
	// 16 KiB, for callers that do not stream it.
	Output string `json:"output,omitempty"`
}

// Result is every check of one verify run.
type Result struct {
	World  string  `json:"world"`
	Passed bool    `json:"passed"`
	Checks []Check `json:"checks"`
}

// ErrNoChecks is returned, with the file's path, for a project with no
// [agents] verify.
var ErrNoChecks = errors.New("no [agents] verify checks")

const keep = 16 << 10

// Run runs every check in order in the worktree of w, with the world's
// environment over base, streaming output to out (nil: captured only). A
// failing check does not stop the ones after it.
func Run(ctx context.Context, w *world.World, rec *world.Record, base []string, out io.Writer) (Result, error) {
	res := Result{World: w.Name, Passed: true}
	if len(w.Config.Agents.Verify) == 0 {
		return res, fmt.Errorf("%s has %w: add verify = [\"make test\"] under [agents]", w.Config.Path, ErrNoChecks)
	}
	env, err := w.ProcessEnv(rec, base, "")
	if err != nil {
		return res, err
	}
	lookup := w.Lookup(w.Coordinates(rec), "", env)
	for _, raw := range w.Config.Agents.Verify {
		line, err := world.InterpolateShell(raw, lookup)
		if err != nil {
			// Not run: a failed check that says why, as a command would.
			res.Passed = false
			res.Checks = append(res.Checks, Check{Cmd: raw, ExitCode: -1, Output: err.Error()})
			if out != nil {
				fmt.Fprintln(out, err)
			}
			continue
		}
		c := Check{Cmd: line}
		cmd := procgroup.Command(ctx, c.Cmd)
		cmd.Dir = w.Worktree.Path
		mark := checkMark()
		marked := procgroup.Mark(cmd, world.SortedEnv(env), mark)
		tail := &tailBuffer{max: keep}
		var sink io.Writer = tail
		if out != nil {
			sink = io.MultiWriter(out, tail)
		}
		cmd.Stdout, cmd.Stderr = sink, sink
		// A check is done when its command exits. What it left running (a
		// server started with &) held its output open, and verify waited
		// for that to end, for good with a dev server: its output is read
		// a second more, then it is stopped, in its group or its session.
		cmd.WaitDelay = time.Second
		start := time.Now()
		err = cmd.Start()
		marked()
		if err == nil {
			err = cmd.Wait()
		}
		c.Seconds = time.Since(start).Seconds()
		if errors.Is(err, exec.ErrWaitDelay) && cmd.ProcessState != nil && cmd.ProcessState.Success() {
			err = nil
		}
		if leftovers(cmd, mark) {
			note := "binky: stopped what this check left running\n"
			if out != nil {
				fmt.Fprint(out, note)
			}
			tail.Write([]byte(note))
		}
		c.Output = tail.String()
		var ee *exec.ExitError
		switch {
		case err == nil:
			c.Passed = true
		case errors.As(err, &ee):
			c.ExitCode = ee.ExitCode()
		case errors.Is(err, exec.ErrWaitDelay) && cmd.ProcessState != nil:
			c.ExitCode = cmd.ProcessState.ExitCode()
		default:
			c.ExitCode = -1
			c.Output += "\n" + err.Error()
		}
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		res.Passed = res.Passed && c.Passed
		res.Checks = append(res.Checks, c)
	}
	return res, nil
}

// checkMark is a mark of its own for one check's run: what it starts in a
// session of its own (setsid) carries it too.
func checkMark() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "verify." + hex.EncodeToString(b[:])
}

// leftovers stops what a check that has exited left running, in its
// process group or carrying its mark, and reports whether there was any.
func leftovers(cmd *exec.Cmd, mark string) bool {
	if cmd.Process == nil {
		return false
	}
	left := procgroup.GroupAlive(cmd.Process.Pid)
	procgroup.Stop(cmd.Process.Pid, 2*time.Second)
	return procgroup.KillMarked(mark) > 0 || left
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max  int
	buf  bytes.Buffer
	last byte // the last byte dropped, once some were
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf.Write(p)
	if over := t.buf.Len() - t.max; over > 0 {
		t.last = t.buf.Next(over)[over-1]
	}
	return len(p), nil
}

// String is the kept output from its first whole line; kept inside one
// line, it says its start is cut (logfile.CutStartMark), which also tells
// the hider that a secret's last part may stand there.
func (t *tailBuffer) String() string {
	b := t.buf.Bytes()
	if t.last == 0 || t.last == '\n' {
		return string(b)
	}
	// From the first whole line, unless that leaves nothing to read (one
	// long last line: a failing check's whole message).
	if i := bytes.IndexByte(b, '\n'); i >= 0 && len(bytes.TrimSpace(b[i+1:])) > 0 {
		return string(b[i+1:])
	}
	return logfile.CutStartMark + string(b)
}

// RunWorld runs the checks of the world named name (or the one around dir):
// what `git binky verify` and the MCP verify tool both do.
func RunWorld(ctx context.Context, home world.Home, dir, name string, base []string, out io.Writer) (Result, error) {
	w, err := world.Open(home, dir, name)
	if err != nil {
		return Result{}, err
	}
	rec, err := w.Ensure(ctx)
	if err != nil {
		return Result{}, err
	}
	return Run(ctx, w, rec, base, out)
}

// Package external drives an adapter that is a program of its own:
// binky-adapter-<name> on PATH, run once per verb with the verb as argv[1],
// {"slice": ..., "config": {...}} on stdin, and {"ok": true, ...} or
// {"ok": false, "error": ..., "code": ...} on stdout. Any language can
// write one. The codes binky branches on: "taken" (the name exists and is
// not this world's: binky retries with a salted name) and "not_ours"
// (teardown left the slice alone).
package external

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/git-binky/git-binky/adapters"
)

// Timeout bounds one call of an external adapter.
const Timeout = 2 * time.Minute

// External is an adapter backed by an executable.
type External struct {
	Name string // the adapter name in binky.toml
	Path string // the executable
}

// Find returns the external adapter for name, or an error saying what to
// install.
func Find(name string) (*External, error) {
	p, err := exec.LookPath(adapters.ExternalCommand(name))
	if err != nil {
		return nil, fmt.Errorf("adapter %q is not built in and %s is not on PATH: install it, or use postgres or redis", name, adapters.ExternalCommand(name))
	}
	return &External{Name: name, Path: p}, nil
}

type request struct {
	Slice    string         `json:"slice"`
	World    string         `json:"world"`
	Home     string         `json:"home,omitempty"`
	Password string         `json:"password,omitempty"`
	AdminURL string         `json:"admin_url,omitempty"`
	Config   map[string]any `json:"config"`
	Template string         `json:"template,omitempty"`
}

type response struct {
	OK           bool                  `json:"ok"`
	Error        string                `json:"error"`
	Code         string                `json:"code"`
	Address      json.RawMessage       `json:"address"`
	Capabilities adapters.Capabilities `json:"capabilities"`
	// Slices (from list) maps each slice to its owner: {"world": ...,
	// "home": ...}, or, as older adapters answer, the world id alone.
	Slices map[string]json.RawMessage `json:"slices"`
}

func (e *External) call(ctx context.Context, verb string, req request) (response, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	if req.Config == nil {
		req.Config = map[string]any{}
	}
	in, _ := json.Marshal(req)
	cmd := exec.CommandContext(ctx, e.Path, verb)
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var resp response
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &resp); err != nil {
		msg := strings.TrimSpace(stderr.String())
		switch {
		case ctx.Err() != nil:
			return resp, fmt.Errorf("%s %s timed out after %s", e.Path, verb, Timeout)
		case runErr != nil:
			return resp, fmt.Errorf("%s %s: %v: %s", e.Path, verb, runErr, msg)
		}
		return resp, fmt.Errorf("%s %s printed no JSON answer (%v); stderr: %s", e.Path, verb, err, msg)
	}
	if !resp.OK {
		msg := resp.Error
		if s := strings.TrimSpace(stderr.String()); s != "" {
			msg += " (stderr: " + s + ")"
		}
		err := fmt.Errorf("adapter %s %s %s: %s", e.Name, verb, req.Slice, msg)
		switch resp.Code {
		case "taken":
			err = fmt.Errorf("%w: %w", err, adapters.ErrTaken)
		case "not_ours":
			err = fmt.Errorf("%w: %w", err, adapters.ErrNotOurs)
		}
		return resp, err
	}
	return resp, nil
}

func toRequest(s adapters.Slice) request {
	return request{Slice: s.Name, World: s.World, Home: s.Home, Password: s.Password, AdminURL: s.AdminURL, Config: s.Config}
}

// Provision runs `<adapter> provision`.
func (e *External) Provision(ctx context.Context, s adapters.Slice) error {
	_, err := e.call(ctx, "provision", toRequest(s))
	return err
}

// Resolve runs `<adapter> resolve`; the address may be a string (the URL)
// or an object of fields.
func (e *External) Resolve(ctx context.Context, s adapters.Slice) (adapters.Address, error) {
	resp, err := e.call(ctx, "resolve", toRequest(s))
	if err != nil {
		return nil, err
	}
	var u string
	if json.Unmarshal(resp.Address, &u) == nil {
		return adapters.Address{"url": u, "name": s.Name}, nil
	}
	addr := adapters.Address{}
	if err := json.Unmarshal(resp.Address, &addr); err != nil || len(addr) == 0 {
		return nil, fmt.Errorf("adapter %s resolve: address must be a URL string or an object of strings", e.Name)
	}
	return addr, nil
}

// Teardown runs `<adapter> teardown`.
func (e *External) Teardown(ctx context.Context, s adapters.Slice) error {
	_, err := e.call(ctx, "teardown", toRequest(s))
	return err
}

// Capabilities runs `<adapter> capabilities`; an adapter that cannot answer
// has none.
func (e *External) Capabilities() adapters.Capabilities {
	resp, err := e.call(context.Background(), "capabilities", request{})
	if err != nil {
		return adapters.Capabilities{}
	}
	return resp.Capabilities
}

// List runs `<adapter> list` (for adapters with the List capability).
func (e *External) List(ctx context.Context, adminURL string) ([]adapters.Owned, error) {
	resp, err := e.call(ctx, "list", request{AdminURL: adminURL})
	if err != nil {
		return nil, err
	}
	out := make([]adapters.Owned, 0, len(resp.Slices))
	for name, raw := range resp.Slices {
		var o adapters.Owner
		if json.Unmarshal(raw, &o.World) != nil {
			if err := json.Unmarshal(raw, &o); err != nil || o.World == "" {
				return nil, fmt.Errorf("adapter %s list: slice %s: owner must be {\"world\": ..., \"home\": ...}", e.Name, name)
			}
		}
		out = append(out, adapters.Owned{Slice: name, Kind: e.Name, Name: name, Owner: o})
	}
	return out, nil
}

var (
	_ adapters.Adapter = (*External)(nil)
	_ adapters.Lister  = (*External)(nil)
)

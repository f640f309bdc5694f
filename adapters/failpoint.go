package adapters

import "context"

// StepFunc is called by an adapter after each step that changes a server
// (role created, database created, marked...). It is how tests cut a
// provision, clone or teardown off at any point: the daemon installs one
// that fails or kills itself at the step named by its test variable
// (daemon/failpoint.go). Adapters never read the variable themselves.
type StepFunc func(step string) error

type stepKey struct{}

// WithSteps returns a context whose adapter steps report to fn.
func WithSteps(ctx context.Context, fn StepFunc) context.Context {
	return context.WithValue(ctx, stepKey{}, fn)
}

// Step reports that an adapter finished step; an error from the installed
// StepFunc is returned and the adapter stops there, as if the server had
// failed. Step names are "<kind>.<what was done>", and every one is listed
// in daemon/failpoint.go.
func Step(ctx context.Context, step string) error {
	if fn, ok := ctx.Value(stepKey{}).(StepFunc); ok && fn != nil {
		return fn(step)
	}
	return nil
}

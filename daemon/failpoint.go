package daemon

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/git-binky/git-binky/adapters"
)

// Failure points, for tests only: with BINKY_TEST_FAIL_AT=<step> in the
// daemon's environment, the step fails as a server error would; with
// BINKY_TEST_CRASH_AT=<step> the daemon kills itself (SIGKILL, as kill -9
// would) right after it; with BINKY_TEST_PAUSE_AT=<step> it waits 2 s
// there, for a test to act in between (a client's Ctrl-C). Read here and
// nowhere else; adapters report their steps through adapters.Step and
// never read the variables.
const (
	failAtEnv  = "BINKY_TEST_FAIL_AT"
	crashAtEnv = "BINKY_TEST_CRASH_AT"
	pauseAtEnv = "BINKY_TEST_PAUSE_AT"
)

// FailureSteps is every step a test can cut off, in the order an up (then
// a remove) passes them: the daemon's, then its adapters'.
var FailureSteps = []string{
	// daemon/slices.go
	"slice.pending_saved",    // the slice's name is recorded, nothing made yet
	"golden.provisioned",     // the golden template exists, not migrated
	"golden.migrated",        // migrated and seeded, not yet a template
	"golden.prepared",        // a template, its marker file not written
	"blank.provisioned",      // the blank template exists, not prepared (built after an up: blank.go)
	"blank.prepared",         // the blank is a template, its marker file not written
	"slice.cloned",           // the world's copy made, the record not ready
	"slice.provisioned",      // provisioned (no clone), not migrated
	"slice.migrated",         // migrated, not seeded
	"slice.seeded",           // seeded, the record not ready
	"reset.slice_dropped",    // a reset dropped one slice, the record still names it
	"remove.opened",          // a remove found its world, not yet asked git whether the worktree is clean
	"teardown.slice_dropped", // one slice dropped, the record still names it
	// adapters/postgres
	"postgres.spare_taken", "postgres.role_created", "postgres.database_created", "postgres.database_marked", "postgres.schema_granted",
	"postgres.teardown.database_dropped",
	// adapters/mysql
	"mysql.marked", "mysql.database_created", "mysql.user_granted", "mysql.spare_taken", "mysql.spare_dropped",
	"mysql.tables_copied", "mysql.objects_copied",
	"mysql.spare.marked", "mysql.spare.created", "mysql.spare.copied", "mysql.spare.made", // the next spare, in the background
	"mysql.teardown.spare_dropped", "mysql.teardown.user_dropped", "mysql.teardown.database_dropped",
	// adapters/mongodb
	"mongodb.collections_created", // a FerretDB clone's collections made, its documents not copied, the database still the admin's
	// adapters/redis
	"redis.marked", "redis.teardown.user_dropped", "redis.teardown.keys_deleted",
}

// step is passed after each step of making or dropping a slice.
func (d *Daemon) step(name string) error {
	if v := os.Getenv(crashAtEnv); v != "" && v == name {
		d.log.Warn("crashing on purpose", "step", name, "because", crashAtEnv)
		killSelf()
		select {} // the signal is on its way
	}
	if v := os.Getenv(pauseAtEnv); v != "" && v == name {
		d.log.Warn("pausing on purpose", "step", name, "because", pauseAtEnv)
		time.Sleep(2 * time.Second)
	}
	if v := os.Getenv(failAtEnv); v != "" && v == name {
		return fmt.Errorf("failed on purpose after step %s (%s is set)", name, failAtEnv)
	}
	return nil
}

// withSteps makes the adapters called with ctx report their steps to
// d.step.
func (d *Daemon) withSteps(ctx context.Context) context.Context {
	return adapters.WithSteps(ctx, d.step)
}

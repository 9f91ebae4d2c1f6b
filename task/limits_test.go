package task_test

import (
	"testing"

	"github.com/weftmcp/weft/internal/limitsdoc"
	"github.com/weftmcp/weft/task"
)

// taskLimits are the task layer's limits, in the order of the Tasks
// section of docs/limits.md.
var taskLimits = []limitsdoc.Limit{
	{Doc: "live tasks per identity", Names: []string{"TaskOptions.MaxTasksPerIdentity", "DefaultMaxTasksPerIdentity"},
		Default: limitsdoc.Num(task.DefaultMaxTasksPerIdentity), Past: []string{"-31999", "HTTP 429", "Retry-After"}},
	{Doc: "live tasks per partition", Names: []string{"TaskOptions.MaxTasksPerPartition", "DefaultMaxTasksPerPartition"},
		Default: limitsdoc.Num(task.DefaultMaxTasksPerPartition), Past: []string{"-31999", "HTTP 429", "Retry-After"}},
	{Doc: "task workers", Names: []string{"TaskOptions.Workers", "Runner.Workers", "DefaultWorkers"},
		Default: limitsdoc.Num(task.DefaultWorkers), Past: []string{"waits"}},
	{Doc: "task workers per partition", Names: []string{"TaskOptions.MaxPartitionWorkers", "Runner.MaxPartitionWorkers", "DefaultPartitionWorkers", "Runner.Workers"},
		Default: limitsdoc.Ref("Runner.Workers"), Past: []string{"not claimed from"}},
}

// notLimits are the package's constants named like limits that bound
// nothing a client makes large.
var notLimits = map[string]string{
	"DefaultLease":            "how long a claim lasts without renewal, a failure-detection window",
	"DefaultPollInterval":     "how often an idle runner polls, a latency setting",
	"DefaultShutdownTimeout":  "how long a stopping runner waits for its steps, an operator setting",
	"DefaultSweepInterval":    "how often expired tasks are failed, a housekeeping period",
	"DefaultRetention":        "how long finished tasks stay readable; the live-task bounds cap what a client can create",
	"MaxChannelLen":           "bus channel names are chosen by the server, not by clients",
	"DefaultSubscriberBuffer": "events beyond it are dropped hints (subscribers poll too); clients subscribe through listen streams, bounded per partition",
}

// TestLimitsDoc holds the task layer's limits to its section of
// docs/limits.md, both ways, and fails when a constant of the package
// named like a limit is in no row (nor in notLimits).
func TestLimitsDoc(t *testing.T) {
	errs, err := limitsdoc.CheckSection("../docs/limits.md", "Tasks", ".", taskLimits, nil, notLimits)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range errs {
		t.Error(e)
	}
}

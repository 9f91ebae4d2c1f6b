package main

import (
	"fmt"
	"strings"
	"time"
)

// tasksSection writes the "Tasks: create to complete" section.
func (r *report) tasksSection(p func(format string, args ...any)) {
	p("## Tasks: create to complete\n\n")
	p("The same no-op work on Weft's durable tasks and on River (github.com/riverqueue/river %s, a PostgreSQL job queue), "+
		"in this process, with the same number of workers (Weft's `TaskOptions.Workers`, River's `MaxWorkers`) and, for PostgreSQL, the same database. "+
		"**Light** load: one client creates a task and waits until it is observed completed before creating the next (%d tasks, %d workers): "+
		"the latency of an idle system. **Heavy** load: %d clients create %d tasks as fast as they can, with %s workers: the throughput, "+
		"n over the time from the first create to the last observed completion (the latencies then include the queueing).\n\n",
		riverVersion, r.cfg.taskLight, r.cfg.taskWorkers[0], r.cfg.taskClients, r.cfg.tasks, joinInts(r.cfg.taskWorkers, " and "))
	p("- **Weft**: a task is created by `tools/call` on a Weft server with tasks on (`Options.Tasks`; the tool answers `RunAsTask`; the runner " +
		"runs its step, which completes), sent in memory to `Server.ServeHTTP`; it counts as completed when `tasks/get` reads it " +
		"`completed`. Completion is noticed through the store's change events (`task.ChannelChanged`, as Weft's own " +
		"`notifications/tasks` are), each read by one of 4 reader goroutines.\n")
	p("- **River**: a job is created by `Client.Insert` of a job whose worker returns nil, and counts as completed when the " +
		"client's `EventKindJobCompleted` subscription reports it (River emits it once the completion is stored). River runs in a " +
		"throwaway schema (its migrations applied by `rivermigrate`, dropped afterwards), as the pgstore rows do. Two configurations: " +
		"River's defaults, and its `FetchCooldown` (the minimum time between two fetches of new jobs, which its documentation says " +
		"limits throughput) at its 1 ms minimum.\n")
	p("- In both, once per %s the %d oldest tasks created more than %s ago and not seen completed are read again (events are "+
		"hints; a few, so that under a backlog this fallback does not load the database being measured); latency is from the start "+
		"of the create call to the observed completion.\n", stragglerAge, stragglerMax, stragglerAge)
	p("- What each task costs the database. Weft: a share of a create (concurrent creates of one store share one transaction), " +
		"a share of a claim (the runner claims for all its free workers in one transaction, `FOR UPDATE SKIP LOCKED`, and, while steps are " +
		"short, ahead of them: twice the workers freed during its previous claim, so that a worker rarely waits for a claim's commit), and a share " +
		"of a finish (concurrent read-modify-writes of one store share one transaction; a worker takes its next step while its last " +
		"outcome is being stored); change events are sent after each commit, to the instance's own subscribers at once and to the " +
		"other instances batched by a notifier. River: its insert (its own commit), " +
		"a share of a fetch, and a share of its batch completer's update, which at low load runs every 250 ms: hence River's " +
		"light-load latency, whatever its fetch cooldown.\n")
	p("- PostgreSQL here is one server on this machine's shared disk: at heavy load both systems wait mostly on the WAL flush of "+
		"their commits, so their throughput moves with the disk's other users from one run to the next; the ratio of two rows "+
		"measured one after the other is steadier than either figure. So each heavy load on PostgreSQL runs %d times, Weft and River "+
		"alternating run by run, and each of their rows is that system's run of median throughput.\n\n", pgRuns(r.cfg))
	p("| system | store / configuration | load | clients | workers | tasks | wall | tasks/s | p50 create→complete | p99 |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, t := range r.tasks {
		if t.note != "" {
			p("| %s | %s | %s | – | – | – | – | – | – | %s |\n", t.system, t.store, t.load, t.note)
			continue
		}
		p("| %s | %s | %s | %d | %d | %d | %s | %.0f | %s | %s |\n", t.system, t.store, t.load, t.clients, t.workers, t.n,
			t.wall.Round(time.Millisecond), t.rate, us(t.p50), us(t.p99))
	}
	p("\n")
}

// taskFindings explain the task rows of this run.
func (r *report) taskFindings() []string {
	var fs []string
	for _, t := range r.tasks {
		if t.note == "" && t.load == "heavy" {
			fs = append(fs, fmt.Sprintf("%s, %s, %d workers: %.0f tasks/s from create to completed at heavy load, p50 %s.", t.system, t.store, t.workers, t.rate, us(t.p50)))
		}
	}
	light, ok1 := find(r.tasks, func(t taskRow) bool {
		return t.system == "Weft" && t.store == pgStoreName && t.load == "light" && t.note == ""
	})
	river, ok2 := find(r.tasks, func(t taskRow) bool { return t.system == "River" && t.load == "light" && t.note == "" })
	if ok1 && ok2 {
		fs = append(fs, fmt.Sprintf("At light load a Weft task on PostgreSQL completes in %s (p50) against %s for River: Weft's runner is woken in "+
			"process by the create on the same instance and its finish commits at once; River's completions wait for its batch completer.",
			us(light.p50), us(river.p50)))
	}
	return fs
}

func joinInts(xs []int, sep string) string {
	var b strings.Builder
	for i, x := range xs {
		if i > 0 {
			b.WriteString(sep)
		}
		fmt.Fprint(&b, x)
	}
	return b.String()
}

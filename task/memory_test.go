package task_test

import (
	"testing"
	"time"

	"github.com/weftmcp/weft/task"
	"github.com/weftmcp/weft/task/storetest"
)

func newMemory(t *testing.T, now func() time.Time) task.Store {
	s := task.NewMemoryStore(&task.MemoryOptions{Now: now})
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestMemoryStoreConformance(t *testing.T) {
	storetest.Run(t, newMemory)
}

func TestMemoryStoreLoad(t *testing.T) {
	s := task.NewMemoryStore(nil)
	t.Cleanup(func() { _ = s.Close() })
	storetest.RunLoad(t, []task.Store{s}, storetest.LoadConfig{})
}

func BenchmarkMemoryStoreCreateToComplete(b *testing.B) {
	s := task.NewMemoryStore(nil)
	b.Cleanup(func() { _ = s.Close() })
	storetest.Bench(b, s, 4)
}

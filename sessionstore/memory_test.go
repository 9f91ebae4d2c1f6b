package sessionstore_test

import (
	"testing"

	"github.com/weftmcp/weft/sessionstore"
	"github.com/weftmcp/weft/sessionstore/storetest"
)

func TestMemoryContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T, clock *storetest.Clock, limits sessionstore.Limits) (sessionstore.Store, sessionstore.Store) {
		m := sessionstore.NewMemory(&sessionstore.MemoryOptions{Limits: limits, Now: clock.Now})
		return m, m
	})
}

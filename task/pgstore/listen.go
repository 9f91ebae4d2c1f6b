package pgstore

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/weftmcp/weft/internal/pglisten"
)

// startListener connects the listening connection and returns once LISTEN is
// in effect, so that events published after Open returns are heard. Every
// notification carries "<logical channel>\n<payload>" and is fanned out to
// the local hub.
func (s *Store) startListener(ctx context.Context, cfg *pgx.ConnConfig) error {
	l, err := pglisten.Start(ctx, cfg, s.channel, "task", s.log, func(p string) {
		channel, payload, ok := strings.Cut(p, "\n")
		if ok {
			_ = s.hub.Publish(context.Background(), channel, payload)
		}
	})
	if err != nil {
		return err
	}
	s.listener = l
	return nil
}

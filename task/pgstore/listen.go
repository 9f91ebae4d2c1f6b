package pgstore

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/weftmcp/weft/internal/pglisten"
)

// startListener connects the listening connection and returns once LISTEN is
// in effect, so that events published after Open returns are heard. Every
// notification carries "<origin>\n<logical channel>\n<payload>"; those of
// other origins are fanned out to the local hub (this Store delivered its
// own in process).
func (s *Store) startListener(ctx context.Context, cfg *pgx.ConnConfig) error {
	l, err := pglisten.Start(ctx, cfg, s.channel, "task", s.log, func(p string) {
		origin, rest, ok := strings.Cut(p, "\n")
		if !ok || origin == s.origin {
			return
		}
		if channel, payload, ok := strings.Cut(rest, "\n"); ok {
			_ = s.hub.Publish(context.Background(), channel, payload)
		}
	})
	if err != nil {
		return err
	}
	s.listener = l
	return nil
}

package weft

import (
	"fmt"
	"time"

	"github.com/weftmcp/weft/exactjson"
)

// Limits bound everything a client can make large. A zero field means its
// default; a value above its ceiling is a configuration error.
type Limits struct {
	// MaxBodyBytes bounds an HTTP request body (413 past it) and a stdio
	// line. Default 10 MiB, ceiling 16 MiB.
	MaxBodyBytes int
	// MaxOutputBytes bounds one encoded response. Default 4 MiB, ceiling 16 MiB.
	MaxOutputBytes int
	// MaxHeaderCount bounds the number of HTTP header fields (431 past it).
	// Default 100, ceiling 1,000.
	MaxHeaderCount int
	// MaxCursorBytes bounds a pagination cursor. Default 4,096, ceiling 174,762.
	MaxCursorBytes int
	// MaxURIBytes bounds a resource URI. Default 65,536, ceiling 1 MiB.
	MaxURIBytes int
	// MaxInputResponses bounds the keys of inputResponses. Default 64, ceiling 1,024.
	MaxInputResponses int
	// MaxResourceSubscriptions bounds the URIs of one subscriptions/listen.
	// Default 256, ceiling 4,096.
	MaxResourceSubscriptions int
	// MaxSubscriptionsPerPartition bounds the open subscriptions/listen
	// streams of one authorization partition; callers without a partition
	// each have a share of their own (principal, else remote host, else
	// stdio). Default 32, ceiling 4,096.
	MaxSubscriptionsPerPartition int
	// MaxSubscriptionsPerIdentity bounds the open subscriptions/listen
	// streams of one caller (Identity.Principal, else its partition, else
	// its remote host), below MaxSubscriptionsPerPartition so that one
	// principal cannot take all of its partition's streams. Default 8,
	// ceiling 4,096.
	MaxSubscriptionsPerIdentity int
	// MaxSubscriptions bounds the open subscriptions/listen streams of the
	// server, whoever opened them. Default 16,384, ceiling 1,048,576.
	MaxSubscriptions int
	// JSON bounds the request body's JSON (depth, nodes, numbers, strings).
	// MaxInputBytes is always set to MaxBodyBytes.
	JSON exactjson.Limits
}

// Limit defaults and ceilings.
const (
	// MaxPartitionBytes bounds Identity.Partition (an admission returning a
	// longer one is a server bug: -32603).
	MaxPartitionBytes = 256
	// MaxCompletionValues is the most completion values sent in one result
	// (more are cut, with hasMore set).
	MaxCompletionValues = 100
	// DefaultPageSize is the default Options.PageSize.
	DefaultPageSize = 256
	// DefaultBodyTimeout is the default Options.BodyTimeout.
	DefaultBodyTimeout = 60 * time.Second
	// DefaultWriteTimeout is the default Options.WriteTimeout.
	DefaultWriteTimeout = 30 * time.Second
	// DefaultKeepAlive is the default Options.KeepAlive.
	DefaultKeepAlive = 15 * time.Second
	// DefaultReadHeaderTimeout is NewHTTPServer's header read timeout.
	DefaultReadHeaderTimeout = 10 * time.Second
	// MaxConcurrentCeiling and MaxQueueCeiling bound Options.MaxConcurrent
	// and Options.MaxQueue; MaxTimeoutCeiling bounds every Options timeout.
	MaxConcurrentCeiling = 65536
	MaxQueueCeiling      = 1 << 20
	MaxTimeoutCeiling    = 24 * time.Hour

	DefaultMaxBodyBytes                 = 10 << 20
	MaxBodyBytesCeiling                 = 16 << 20
	DefaultMaxOutputBytes               = 4 << 20
	MaxOutputBytesCeiling               = 16 << 20
	DefaultMaxHeaderCount               = 100
	MaxHeaderCountCeiling               = 1000
	DefaultMaxHeaderBytes               = 64 << 10
	DefaultMaxCursorBytes               = 4096
	MaxCursorBytesCeiling               = 174762
	DefaultMaxURIBytes                  = 65536
	MaxURIBytesCeiling                  = 1 << 20
	DefaultMaxInputResponses            = 64
	MaxInputResponsesCeiling            = 1024
	DefaultMaxResourceSubscriptions     = 256
	MaxResourceSubscriptionsCeiling     = 4096
	DefaultMaxSubscriptionsPerPartition = 32
	MaxSubscriptionsPerPartitionCeiling = 4096
	DefaultMaxSubscriptionsPerIdentity  = 8
	MaxSubscriptionsPerIdentityCeiling  = 4096
	DefaultMaxSubscriptions             = 16384
	MaxSubscriptionsCeiling             = 1 << 20
)

func limitField(name string, v *int, def, ceiling int) error {
	switch {
	case *v == 0:
		*v = def
	case *v < 0 || *v > ceiling:
		return fmt.Errorf("weft: Limits.%s = %d is outside 1..%d", name, *v, ceiling)
	}
	return nil
}

func (l Limits) withDefaults() (Limits, error) {
	for _, f := range []struct {
		name     string
		v        *int
		def, max int
	}{
		{"MaxBodyBytes", &l.MaxBodyBytes, DefaultMaxBodyBytes, MaxBodyBytesCeiling},
		{"MaxOutputBytes", &l.MaxOutputBytes, DefaultMaxOutputBytes, MaxOutputBytesCeiling},
		{"MaxHeaderCount", &l.MaxHeaderCount, DefaultMaxHeaderCount, MaxHeaderCountCeiling},
		{"MaxCursorBytes", &l.MaxCursorBytes, DefaultMaxCursorBytes, MaxCursorBytesCeiling},
		{"MaxURIBytes", &l.MaxURIBytes, DefaultMaxURIBytes, MaxURIBytesCeiling},
		{"MaxInputResponses", &l.MaxInputResponses, DefaultMaxInputResponses, MaxInputResponsesCeiling},
		{"MaxResourceSubscriptions", &l.MaxResourceSubscriptions, DefaultMaxResourceSubscriptions, MaxResourceSubscriptionsCeiling},
		{"MaxSubscriptionsPerPartition", &l.MaxSubscriptionsPerPartition, DefaultMaxSubscriptionsPerPartition, MaxSubscriptionsPerPartitionCeiling},
		{"MaxSubscriptionsPerIdentity", &l.MaxSubscriptionsPerIdentity, DefaultMaxSubscriptionsPerIdentity, MaxSubscriptionsPerIdentityCeiling},
		{"MaxSubscriptions", &l.MaxSubscriptions, DefaultMaxSubscriptions, MaxSubscriptionsCeiling},
	} {
		if err := limitField(f.name, f.v, f.def, f.max); err != nil {
			return l, err
		}
	}
	l.JSON.MaxInputBytes = l.MaxBodyBytes
	if err := l.JSON.Validate(); err != nil {
		return l, fmt.Errorf("weft: Limits.JSON: %w", err)
	}
	return l, nil
}

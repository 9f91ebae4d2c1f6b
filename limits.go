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
	// maxPartitionBytes bounds Identity.Partition (an admission returning a
	// longer one is a server bug: -32603).
	maxPartitionBytes = 256
	// maxCompletionValues is the most completion values sent in one result
	// (more are cut, with hasMore set).
	maxCompletionValues = 100
	// defaultPageSize is the default Options.PageSize.
	defaultPageSize = 256
	// defaultBodyTimeout is the default Options.BodyTimeout.
	defaultBodyTimeout = 60 * time.Second
	// defaultWriteTimeout is the default Options.WriteTimeout.
	defaultWriteTimeout = 30 * time.Second
	// defaultKeepAlive is the default Options.KeepAlive.
	defaultKeepAlive = 15 * time.Second
	// defaultReadHeaderTimeout is NewHTTPServer's header read timeout.
	defaultReadHeaderTimeout = 10 * time.Second
	// maxConcurrentCeiling and maxQueueCeiling bound Options.MaxConcurrent
	// and Options.MaxQueue; maxTimeoutCeiling bounds every Options timeout.
	maxConcurrentCeiling = 65536
	maxQueueCeiling      = 1 << 20
	maxTimeoutCeiling    = 24 * time.Hour

	defaultMaxBodyBytes                 = 10 << 20
	maxBodyBytesCeiling                 = 16 << 20
	defaultMaxOutputBytes               = 4 << 20
	maxOutputBytesCeiling               = 16 << 20
	defaultMaxHeaderCount               = 100
	maxHeaderCountCeiling               = 1000
	defaultMaxHeaderBytes               = 64 << 10
	defaultMaxCursorBytes               = 4096
	maxCursorBytesCeiling               = 174762
	defaultMaxURIBytes                  = 65536
	maxURIBytesCeiling                  = 1 << 20
	defaultMaxInputResponses            = 64
	maxInputResponsesCeiling            = 1024
	defaultMaxResourceSubscriptions     = 256
	maxResourceSubscriptionsCeiling     = 4096
	defaultMaxSubscriptionsPerPartition = 32
	maxSubscriptionsPerPartitionCeiling = 4096
	defaultMaxSubscriptionsPerIdentity  = 8
	maxSubscriptionsPerIdentityCeiling  = 4096
	defaultMaxSubscriptions             = 16384
	maxSubscriptionsCeiling             = 1 << 20
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
		{"MaxBodyBytes", &l.MaxBodyBytes, defaultMaxBodyBytes, maxBodyBytesCeiling},
		{"MaxOutputBytes", &l.MaxOutputBytes, defaultMaxOutputBytes, maxOutputBytesCeiling},
		{"MaxHeaderCount", &l.MaxHeaderCount, defaultMaxHeaderCount, maxHeaderCountCeiling},
		{"MaxCursorBytes", &l.MaxCursorBytes, defaultMaxCursorBytes, maxCursorBytesCeiling},
		{"MaxURIBytes", &l.MaxURIBytes, defaultMaxURIBytes, maxURIBytesCeiling},
		{"MaxInputResponses", &l.MaxInputResponses, defaultMaxInputResponses, maxInputResponsesCeiling},
		{"MaxResourceSubscriptions", &l.MaxResourceSubscriptions, defaultMaxResourceSubscriptions, maxResourceSubscriptionsCeiling},
		{"MaxSubscriptionsPerPartition", &l.MaxSubscriptionsPerPartition, defaultMaxSubscriptionsPerPartition, maxSubscriptionsPerPartitionCeiling},
		{"MaxSubscriptionsPerIdentity", &l.MaxSubscriptionsPerIdentity, defaultMaxSubscriptionsPerIdentity, maxSubscriptionsPerIdentityCeiling},
		{"MaxSubscriptions", &l.MaxSubscriptions, defaultMaxSubscriptions, maxSubscriptionsCeiling},
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

// Package progerr carries the programming errors a server finds while it
// serves a request to whoever sent the request in process (package
// wefttest), out of band: the client itself only gets a sanitized -32603.
// The reporter travels in the request's context, so nothing is global and
// a server never learns who is listening.
package progerr

import "context"

type reporterKey struct{}

// WithReporter returns ctx carrying f, which [Report] calls with each
// programming error found while the request is served. f must be safe for
// concurrent use.
func WithReporter(ctx context.Context, f func(error)) context.Context {
	return context.WithValue(ctx, reporterKey{}, f)
}

// Report passes err to the reporter ctx carries, if any.
func Report(ctx context.Context, err error) {
	if f, ok := ctx.Value(reporterKey{}).(func(error)); ok && f != nil {
		f(err)
	}
}

package progerr

import (
	"context"
	"errors"
	"testing"
)

func TestReport(t *testing.T) {
	Report(context.Background(), errors.New("nobody listens")) // no reporter: nothing happens
	var got []error
	ctx := WithReporter(context.Background(), func(err error) { got = append(got, err) })
	child, cancel := context.WithCancel(ctx)
	defer cancel()
	want := errors.New("bug")
	Report(child, want)
	if len(got) != 1 || got[0] != want {
		t.Fatalf("reported %v, want [%v]", got, want)
	}
}

# The README's two commands: `go run ./cmd/weft serve` and `make test`.
SHELL := /bin/bash
GO ?= go

.PHONY: test vet unit fuzz conformance postgres bench

## test: everything CI runs: vet and gofmt, unit tests with -race, fuzzing, conformance.
test: vet unit fuzz conformance

vet:
	$(GO) vet ./...
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

postgres:
	@bash scripts/ensure-postgres.sh

unit: postgres
	$(GO) test -race -count=1 ./...

fuzz:
	FUZZTIME=$${FUZZTIME:-10s} bash scripts/fuzz.sh

conformance:
	bash scripts/conformance.sh

# The README's two commands: `go run ./cmd/weft-demo` and `make test`.
SHELL := /bin/bash
GO ?= go

.PHONY: test vet unit fuzz conformance postgres bench

## test: everything CI runs: vet and gofmt, unit tests with -race, fuzzing,
## the bounded soak, the rolling restart behind HAProxy, then conformance
## (its acceptance figure prints last).
test: vet unit fuzz soak rolling conformance

## vet: go vet and gofmt, then `go mod tidy -diff` in every module (the root
## and bench/): a go.mod or go.sum that tidy would change fails the build.
MODULES := . bench
vet:
	$(GO) vet ./...
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@for m in $(MODULES); do \
		(cd $$m && $(GO) mod tidy -diff) || { echo "go mod tidy needed in $$m (run: cd $$m && go mod tidy)"; exit 1; }; \
	done

postgres:
	@bash scripts/ensure-postgres.sh

## hydra: Ory Hydra v2.3.0, the upstream OpenID Connect provider of the
## authorization server's tests, built once per machine into
## ~/.cache/weft-hydra (about three minutes cold; internal/hydratest finds it),
## and headless Chromium (Debian's package) for the consent-page test.
.PHONY: hydra
hydra:
	@bash scripts/ensure-hydra.sh >/dev/null
	@bash scripts/ensure-chromium.sh

## check-ensure-postgres: every branch of scripts/ensure-postgres.sh in a
## fresh Debian root (install from nothing, running, database missing,
## stopped). It stops the local cluster while it runs, so it asks for
## WEFT_ALLOW_STOP_POSTGRES=1. Not part of `make test`.
.PHONY: check-ensure-postgres
check-ensure-postgres:
	bash scripts/check-ensure-postgres.sh

## unit: every package's tests with -race (the framework's, then the bench
## harness's, its own module), then the allocation-count tests once more
## without it (under -race sync.Pool drops a random share of what is put
## back, so pooled paths allocate more; those tests skip the count).
unit: postgres hydra
	$(GO) test -race -count=1 ./...
	cd bench && $(GO) test -race -count=1 ./...
	$(GO) test -count=1 -run 'Allocat' ./seal

## flake: the flake hunt for one package (issue 41): its tests run COUNT
## times (default 20) under -race while LOAD busy loops (default 1) keep the
## other core busy; lists every test that failed even once. Not part of
## `make test`: repeat it before a stop for the packages you touched.
##   make flake PKG=./gateway [RUN='TestX|TestY'] [COUNT=50] [LOAD=1] [PARALLEL=1]
.PHONY: flake
flake:
	bash scripts/flake.sh

fuzz:
	FUZZTIME=$${FUZZTIME:-10s} bash scripts/fuzz.sh

## conformance: the 2025-11-25 required set, the 2026-07-28 server scenarios
## (and the tasks extension's) through `weft gateway` fronting the fixture,
## the client scenarios against the Go client (2026-07-28 and 2025-11-25,
## plus the six authorization extensions), then every 2026-07-28 server
## scenario (plus the tasks and skills extensions); the acceptance figure
## prints last. First the authorization-server scenarios against authserver
## in front of Ory Hydra (scripts/conformance-authserver.sh).
conformance:
	bash scripts/conformance-authserver.sh
	bash scripts/conformance-legacy.sh
	bash scripts/conformance-gateway.sh
	bash scripts/conformance-client.sh
	bash scripts/conformance.sh

## bench: the benchmark harness in bench/ (its own Go module, so the
## framework never depends on the peers it is compared with). Measures Weft,
## go-sdk, mcp-go and a bare net/http ceiling over loopback, plus the
## in-memory rows, and rewrites docs/benchmarks.md (about 10 minutes).
## -mod=mod lets bench/go.sum follow dependencies the framework adds; the
## PostgreSQL task row is built in when task/pgstore exists.
## `make bench PARTS=fairness,tasks-fair` runs only those parts (the names
## of benchload's -skip) and merges their sections into docs/benchmarks.md,
## keeping the others.
BENCHTAGS := $(if $(wildcard task/pgstore/pgstore.go),-tags pgstore,)
bench: postgres
	cd bench && $(GO) run -mod=mod $(BENCHTAGS) ./cmd/benchload -rounds 3 $(if $(PARTS),-only $(PARTS)) -out ../docs/benchmarks.md

## soak: the bounded soak of soak/ (about 3-4 minutes, loopback only): two
## `weft serve` instances under 200 concurrent clients, on a throwaway
## PostgreSQL cluster of their own (initdb into a temp dir, its own port;
## the machine's server is never touched), which is restarted once while the
## instances get SIGTERM and SIGKILL. The report goes to a new
## weft-soak-*.md in the OS temp directory (or WEFT_SOAK_REPORT); the log
## names it. No tracked file changes. `make test` runs it too. (It depends
## on `postgres` only for the Debian packages' initdb and pg_ctl.)
## rolling: three `weft serve` instances on a throwaway PostgreSQL cluster
## behind a real HAProxy (installed from Debian packages when missing),
## restarted one after the other under load: no request and no task may be
## lost (about a minute; soak/rolling_test.go).
.PHONY: rolling
rolling: postgres
	@bash scripts/ensure-haproxy.sh
	WEFT_ROLLING=1 $(GO) test -count=1 -timeout 10m -run '^TestRollingRestart$$' -v ./soak

.PHONY: soak
soak: postgres
	WEFT_SOAK=1 $(GO) test -count=1 -timeout 10m -run '^TestSoak$$' -v ./soak

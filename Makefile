# errown's one entry point for lint, tests and benchmarks.
# `make test` is what CI runs (.ci/run): dependencies, lint, race tests and a
# short run of every fuzz target.

GO ?= go
STATICCHECK_VERSION ?= v0.8.2
# Fuzzing runs a number of inputs per target, not a duration: with a
# duration, Go 1.26's fuzz coordinator can report its own deadline as a
# failure ("context deadline exceeded", golang/go#75804).
FUZZTIME ?= 20000x
# The workspace's modules (go.work): errown, the library users import, and
# the modules built on it, which keep their dependencies (Prometheus, the
# OpenTelemetry SDK and bridge, failsafe-go) out of errown's go.mod. From
# the root, ./... is errown's packages only: PKGS names every module's.
NESTED := internal/tracing/otelsdk internal/docsnippets internal/stormsim cmd/stormsim examples bench e2e
MODULES := . $(NESTED)
NESTED_PKGS := $(addsuffix /...,$(addprefix ./,$(NESTED)))
PKGS := ./... $(NESTED_PKGS)

# Fuzz targets as package:FuncName.
FUZZ_TARGETS := \
	./internal/wire:FuzzParseClaim \
	./internal/wire:FuzzParseAttempt \
	./internal/wire:FuzzParseCode \
	./internal/wire:FuzzParseStorm \
	./internal/wire:FuzzParseRoot \
	./nethttp:FuzzParseTTL \
	./nethttp:FuzzStatusError \
	./grpcgo:FuzzPushback \
	.:FuzzConfigFromYAML \
	./internal/retrier:FuzzConfig \
	./internal/memory:FuzzParseSnapshot \
	./internal/memory:FuzzParseQueryResponse \
	./internal/stormsim:FuzzParseTopology \
	./e2e/internal/chaos:FuzzChoices

.PHONY: all
all: test

.PHONY: deps
deps:
	@scripts/deps.sh

.PHONY: test
test: deps lint race peers-smoke soak-short fuzz

.PHONY: lint
lint: vet fmt-check tidy-check staticcheck peers-lint

.PHONY: vet
vet:
	$(GO) vet $(PKGS)

.PHONY: fmt-check
fmt-check:
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# Each module is tidied alone (GOWORK=off): its go.mod holds what its own
# packages and tests need, at the versions it asks for.
.PHONY: tidy-check
tidy-check:
	@set -e; for m in $(MODULES); do \
		bak=/tmp/errown-tidy-$$(echo $$m | tr / -); \
		cp $$m/go.mod $$bak.mod; cp $$m/go.sum $$bak.sum; \
		(cd $$m && GOWORK=off $(GO) mod tidy); \
		if ! cmp -s $$m/go.mod $$bak.mod || ! cmp -s $$m/go.sum $$bak.sum; then \
			echo "go mod tidy changes $$m/go.mod/go.sum:"; diff $$bak.mod $$m/go.mod || true; \
			cp $$bak.mod $$m/go.mod; cp $$bak.sum $$m/go.sum; exit 1; fi; \
	done

.PHONY: staticcheck
staticcheck:
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) $(PKGS)

# bench/peers is a module of its own (its benchmarks' dependencies, the
# retry libraries errown is compared with, stay out of errown's go.mod),
# outside the workspace, so that PKGS and `make bench` leave it out: it gets
# its own vet, tidy check and staticcheck, with GOWORK=off.
PEERS := bench/peers
PEERS_GO := GOWORK=off $(GO)

.PHONY: peers-lint
peers-lint:
	cd $(PEERS) && $(PEERS_GO) vet ./...
	@cd $(PEERS) && cp go.mod /tmp/errown-peers.go.mod.bak && cp go.sum /tmp/errown-peers.go.sum.bak && \
	$(PEERS_GO) mod tidy && \
	if ! cmp -s go.mod /tmp/errown-peers.go.mod.bak || ! cmp -s go.sum /tmp/errown-peers.go.sum.bak; then \
		echo "go mod tidy changes $(PEERS)/go.mod/go.sum:"; diff /tmp/errown-peers.go.mod.bak go.mod; \
		cp /tmp/errown-peers.go.mod.bak go.mod; cp /tmp/errown-peers.go.sum.bak go.sum; exit 1; fi
	cd $(PEERS) && $(PEERS_GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

# One op of each peer benchmark (about 15s), so that they keep building
# and running; `make bench-peers` measures.
.PHONY: peers-smoke
peers-smoke:
	cd $(PEERS) && $(PEERS_GO) test -count=1 -run '^$$' -bench . -benchtime 1x -benchmem ./...

# The fault tests saturate both cores for minutes: run beside the tests that
# judge time (recovery, the lab's open loop), they starve them. So the race
# step runs them on their own, after the others.
# The tests that judge time run on their own too, one package at a time,
# so that nothing else is on the cores while they measure.
FAULT_TESTS := ^(TestFaultMatrix|TestLongOutage|TestFaultSoak)$$
TIMED_LAB_TESTS := ^(TestRunOpenLoop|TestRunCrashAndFail|TestAdmissionFastCheck|TestAdmissionChainFastCheck|TestAdmissionFanoutFastCheck|TestAdmissionColdStart)$$
TIMED_E2E_TESTS := ^(TestRecoveryAfterACapacityDrop|TestAdmissionHoldsGoodput|TestPartialFailure|TestPartialFailureWithHedger|TestObservePredictsEnforce)$$

# The race detector slows every hop: the tests that judge time multiply
# the time bounds they assert by ERROWN_TEST_TIMEOUT_SCALE
# (internal/testtime), RACE_TIMEOUT_SCALE here.
RACE_TIMEOUT_SCALE ?= 2
RACE_ENV := ERROWN_TEST_TIMEOUT_SCALE=$(RACE_TIMEOUT_SCALE)

# errown's own tests run on its module alone (GOWORK=off), at the versions
# its go.mod selects, which a user's build starts from; the other modules'
# run in the workspace.
.PHONY: race
race:
	$(RACE_ENV) GOWORK=off $(GO) test -race -count=1 -timeout 20m ./...
	$(RACE_ENV) $(GO) test -race -count=1 -timeout 20m -skip '$(FAULT_TESTS)|$(TIMED_LAB_TESTS)|$(TIMED_E2E_TESTS)' $(NESTED_PKGS)
	$(RACE_ENV) $(GO) test -race -count=1 -timeout 20m -p 1 -run '$(TIMED_LAB_TESTS)' ./internal/stormsim ./cmd/stormsim
	$(RACE_ENV) $(GO) test -race -count=1 -timeout 20m -run '$(TIMED_E2E_TESTS)' ./e2e
	$(RACE_ENV) $(GO) test -race -count=1 -timeout 20m -run '$(FAULT_TESTS)' ./e2e

# The fault soak (e2e TestFaultSoak): requests through A → B → C with the
# fault matrix cycling between B and C and C restarted every third fault.
# `make test` runs about 200k of them without the race detector (the race
# step runs 20k); `make soak` runs SOAK_REQUESTS and writes docs/soak/
# (the path is relative to e2e/, where the test runs).
SOAK_REQUESTS ?= 5000000
SOAK_SHORT_REQUESTS ?= 200000
# SOAK_MAX stops `make soak` sending after that long (a Go duration; 0:
# never); the report then counts the requests sent.
SOAK_MAX ?= 0

.PHONY: soak-short
soak-short:
	$(GO) test ./e2e -count=1 -timeout 30m -run '^TestFaultSoak$$' -faultsoak.requests=$(SOAK_SHORT_REQUESTS)

.PHONY: soak
soak:
	$(GO) test ./e2e -count=1 -v -timeout 6h -run '^TestFaultSoak$$' -faultsoak.requests=$(SOAK_REQUESTS) -faultsoak.max=$(SOAK_MAX) -faultsoak.report=../docs/soak

.PHONY: fuzz
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; fn=$${t##*:}; \
		echo "fuzz $$pkg $$fn ($(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) $$pkg; \
	done

# Benchmarks: ./bench/ measures errown against plain yarpc in the same run
# (bench/README.md), then every package's own benchmarks run. BENCH_COUNT
# runs of each, enough for benchstat; BENCH narrows them by name.
BENCH ?= .
BENCH_COUNT ?= 6
BENCH_TIME ?= 1s

.PHONY: bench
bench:
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchmem -count $(BENCH_COUNT) -benchtime $(BENCH_TIME) -timeout 60m ./bench/ $(filter-out ./bench/...,$(PKGS))

# The peer table of bench/README.md: errown beside cenkalti/backoff and
# failsafe-go, in process (PEERS_TIME ops of rounds of 20000 requests per
# run) and on the HTTP chain (PEERS_HTTP_TIME ops of twelve 250ms phases),
# PEERS_COUNT runs each in one process (about 15 minutes with the defaults).
PEERS_COUNT ?= 10
PEERS_TIME ?= 10x
PEERS_HTTP_TIME ?= 5x

.PHONY: bench-peers
bench-peers:
	cd $(PEERS) && $(PEERS_GO) test -run '^$$' -bench '^BenchmarkPeers$$' -benchmem -count $(PEERS_COUNT) -benchtime $(PEERS_TIME) -timeout 60m .
	cd $(PEERS) && $(PEERS_GO) test -run '^$$' -bench '^BenchmarkPeersHTTP$$' -benchmem -count $(PEERS_COUNT) -benchtime $(PEERS_HTTP_TIME) -timeout 60m .

# The house figures: exported identifiers of the public packages, the
# library's lines, the writes of an outbound call's state, the request
# path's long functions and the imports that run up a layer of packages.
.PHONY: house
house:
	cd bench && $(GO) run ./cmd/housecount ..

.PHONY: stormsim
stormsim:
	$(GO) run ./cmd/stormsim

# The storm lab's charts in the README: the chain of DESIGN.md's first table,
# the 25-deep chain and the capacity scenario's goodput over time, measured
# on real services (about six minutes).
.PHONY: charts
charts:
	@mkdir -p docs
	$(GO) run ./cmd/stormsim -scenario chain -svg docs/chain.svg
	$(GO) run ./cmd/stormsim -scenario deep -svg docs/deep.svg
	$(GO) run ./cmd/stormsim -scenario capacity -svg docs/capacity.svg

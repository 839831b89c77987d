# lock-reaper: `make demo` shows it working, `make test` runs every test.
GO          ?= go
BIN         ?= bin/lock-reaper
# staticcheck and actionlint are pinned by tools/go.mod (`tool` directives)
# and built into .cache/tools/bin from the module cache: no download on
# every run.
TOOLS_BIN   := $(CURDIR)/.cache/tools/bin
STATICCHECK ?= $(TOOLS_BIN)/staticcheck
ACTIONLINT  ?= $(TOOLS_BIN)/actionlint
TEST_FLAGS  ?= -race -count=1 -timeout 15m

.PHONY: build test quick lint unit services tools demo audit bench bench-scale bench-idle soak soak-day clean

# REVISION is the commit `lock-reaper version` names, -dirty with local
# changes. Go records it itself in a clone, but not in a git worktree (.git is
# a file there), nor in an image build (no .git in the build context).
REVISION    ?= $(shell git rev-parse HEAD 2>/dev/null)$(shell git status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo -dirty)

## build: the binary, built exactly as the Dockerfile builds it
build:
	REVISION="$(REVISION)" scripts/docker-build-cmd.sh $(BIN)

## services: start (or install) the local Redis and PostgreSQL
services:
	scripts/services.sh

# MODULES are the Go modules of the repository: the program (the rules
# included: their purity is a test, reaper/judge/purity_test.go and
# heartbeat/purity_test.go) and deploy/ (the chart and Dockerfile tests, a
# module of its own so that Helm, Kubernetes and BuildKit stay out of the
# program's go.mod). tools/ is built on its own for staticcheck.
MODULES     := . deploy

## tools: the programs the tests and gates run: staticcheck and actionlint
## (tools/go.mod), promtool alone and pgbouncer (scripts/tools.sh; no service is started)
tools:
	@mkdir -p $(TOOLS_BIN)
	cd tools && $(GO) build -o $(TOOLS_BIN)/staticcheck honnef.co/go/tools/cmd/staticcheck
	cd tools && $(GO) build -o $(TOOLS_BIN)/actionlint github.com/rhysd/actionlint/cmd/actionlint
	@scripts/tools.sh >/dev/null
# Further install steps the tests need (a browser for the dashboard test,
# say) go in scripts/tools.sh, so that make and .ci/run share them.

## lint: gofmt, go vet, staticcheck, in every module; actionlint on .github/workflows
## (with shellcheck on their run: scripts when shellcheck is installed)
lint: tools
	$(ACTIONLINT)
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@set -e; for m in $(MODULES); do \
	  echo "== $$m"; (cd $$m && \
	    $(GO) vet ./... && $(STATICCHECK) ./...); done

# Before the tests, the browser test's npm packages are installed when npm is
# (scripts/browser-test.sh; nothing to do when they are up to date), and the
# test databases of killed test processes dropped (DROP_LEFTOVERS). After
# them, whether they passed or not, the schema template goes too (unless
# other tests still run on the server), and a banner says when the browser
# test could not run: `go test` would only skip it quietly.
DROP_LEFTOVERS := $(GO) run ./internal/testing/testenv/cmd/dropleftovers

## test: every test of every module, against real Redis and PostgreSQL, with the race detector
test: services lint
	@scripts/browser-test.sh prepare
	@$(DROP_LEFTOVERS)
	@export PATH="$(TOOLS_BIN):$$PATH"; status=0; for m in $(MODULES); do \
	  echo "== $$m"; (cd $$m && \
	    $(GO) test $(TEST_FLAGS) ./...) || { status=$$?; break; }; done; \
	  $(DROP_LEFTOVERS) || status=1; \
	  scripts/browser-test.sh report; exit $$status

# QUICK_PACKAGES need no Redis, PostgreSQL nor any other program: the rules
# (reaper/judge, heartbeat, with their property tests), explain's and the
# metrics' renderings, and the small helpers. A package joins the list only
# when its tests pass with no service running.
QUICK_PACKAGES := ./reaper/judge/ ./heartbeat/ ./internal/explain/ ./internal/metrics/ \
  ./internal/throwaway/ ./internal/ctxwait/ ./internal/memlimit/ ./internal/nearest/ ./internal/privilege/

# They run with the test services pointed at a closed port and CI=true (a
# missing program fails instead of skipping), so a package that comes to need
# a service fails here instead of slowing the target down.
## quick: the tests that need no service (the rules and the pure helpers), in seconds
quick:
	CI=true REAPER_TEST_REDIS_URL=redis://127.0.0.1:1/0 \
	  REAPER_TEST_DATABASE_URL='postgres://postgres@127.0.0.1:1/postgres?sslmode=disable' \
	  $(GO) test -count=1 $(QUICK_PACKAGES)

## demo: the 2026-07-24 incident reproduced, audited, reaped and audited again,
## on a Redis and a PostgreSQL the demo starts and removes itself
demo: build
	$(BIN) demo

## audit: a read-only pass against the local Redis and PostgreSQL
audit: services build
	$(BIN) audit

## bench: a pass over a production-size keyspace in throwaway databases (BENCHMARKS.md); a few minutes
bench: services
	@mkdir -p bench/results
	$(GO) run ./bench -json bench/results/fleet-latest.json > bench/results/fleet-latest.md
	@cat bench/results/fleet-latest.md

## bench-scale: how a pass's cost grows, one factor of the incident fleet at a time (BENCHMARKS.md); about 30 minutes
bench-scale: services
	@mkdir -p bench/results
	$(GO) run ./bench -scenario scale -json bench/results/scale-latest.json > bench/results/scale-latest.md
	@cat bench/results/scale-latest.md

## bench-idle: run as an idle sidecar, its CPU and RSS over 10 minutes (BENCHMARKS.md)
bench-idle: services
	@mkdir -p bench/results
	$(GO) run ./bench -scenario idle -json bench/results/idle-latest.json > bench/results/idle-latest.md
	@cat bench/results/idle-latest.md

clean:
	rm -rf bin

## soak: the end-to-end chaos test for 10 minutes (SOAK.md records a run)
soak: services
	$(GO) test ./e2e -run Soak -soak 10m -timeout 30m -v

## soak-day: compressed ordinary days for 6 minutes (SOAK.md records a run)
soak-day: services
	$(GO) test ./e2e -run SoakDay -soak-day 6m -timeout 30m -v

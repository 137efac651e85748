# userd — developer commands. `make run` and `make test` work on a fresh
# machine with Go (and gcc, for the embedded SQLite driver) installed.

GO          ?= go
BIN         ?= bin/userd
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT      ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS     := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)
GOTESTFLAGS ?=
# TEST_PACKAGES are the packages `make test` runs (.ci/run leaves out
# test/faults, which it runs on its own with `make faults`).
TEST_PACKAGES ?= ./...
# FUZZTIME is how long `make fuzz` runs each fuzz target. FUZZBUDGET is the
# number of seconds `make test` spends fuzzing, shared among the targets
# (at least 1 s each).
FUZZTIME    ?= 60s
FUZZBUDGET  ?= 15

.PHONY: run build test lint node-deps axe-deps bench fmt tidy clean common-passwords fuzz fuzz-short postman faults soak loadtest purgeload peerload

## run: start the service on the embedded SQLite default (./userd.db, :8080)
run: build
	./$(BIN) serve

## build: compile bin/userd
build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/userd

## test: gofmt and vet, then the whole test suite (PostgreSQL tests need USERD_TEST_POSTGRES_DSN),
## then every fuzz target briefly
# -timeout: adapters/gormstore runs the store contract on SQLite, PostgreSQL
# and MariaDB under the race detector in one package; on 2 busy cores it
# ran past go test's default of 10 minutes a package.
test: lint node-deps
	$(GO) test -count=1 -race -timeout 25m $(GOTESTFLAGS) $(TEST_PACKAGES)
	@$(MAKE) --no-print-directory fuzz-short

# FUZZ_TARGETS lists every fuzz target as package-dir:FuzzName, found in the
# test files so that a new target is fuzzed without editing this file.
FUZZ_TARGETS = $(shell grep -rl --include='*_test.go' '^func Fuzz' . | sort | while read -r f; do \
	sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*\*testing\.F).*/\1/p' "$$f" | sed "s|^|$$(dirname "$$f"):|"; done)

# fuzz-run runs each target for $(1). It is run without the race detector
# (-fuzz and -race do not mix on every platform) and without GOTESTFLAGS:
# -v would print each seed as a "--- PASS" line and skew the counts of
# .ci/run. Every target runs even when one fails. A failing input is
# written to testdata/fuzz/<FuzzName>/ and fails the run; committed, it
# becomes a regression test. Passing runs write nothing into the tree (the
# inputs they find go to the fuzz cache in GOCACHE).
#
# Go 1.26's fuzz coordinator can end a run at its -fuzztime with a bare
# "context deadline exceeded" and no failing input, under CPU contention
# (golang/go#75804, fixed in Go 1.27): such a run, which wrote no input
# into testdata/fuzz, is reported and not counted as a failure. A run
# that found a failing input always wrote it there, and fails.
define fuzz-run
	@rc=0; for t in $(FUZZ_TARGETS); do \
		name="$${t#*:}"; dir="$${t%%:*}"; \
		echo "fuzz: $$name in $$dir for $(1)"; \
		before="$$(ls "$$dir/testdata/fuzz/$$name" 2>/dev/null | wc -l)"; \
		out="$$($(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(1) "$$dir" 2>&1)"; st=$$?; \
		echo "$$out"; \
		if [ $$st -ne 0 ]; then \
			after="$$(ls "$$dir/testdata/fuzz/$$name" 2>/dev/null | wc -l)"; \
			if [ "$$after" = "$$before" ] && echo "$$out" | grep -q '^    context deadline exceeded$$' \
				&& ! echo "$$out" | grep -q 'Failing input written'; then \
				echo "fuzz: $$name: Go's fuzz coordinator stopped at -fuzztime with no failing input (golang/go#75804); not a failure"; \
			else rc=1; fi; \
		fi; \
	done; exit $$rc
endef

## fuzz: run every fuzz target for FUZZTIME (default 60s) each
fuzz:
	$(call fuzz-run,$(FUZZTIME))

## fuzz-short: run every fuzz target briefly, FUZZBUDGET seconds in all (part of `make test`)
fuzz-short:
	$(call fuzz-run,$(shell n=$$(echo $(FUZZ_TARGETS) | wc -w); [ "$$n" -gt 0 ] || n=1; s=$$(( $(FUZZBUDGET) / n )); [ "$$s" -ge 1 ] || s=1; echo $${s}s))

# NODE_DIR holds the Node.js packages of the test suites, pinned in its
# package-lock.json and installed once for all of them: axe-core, which the
# Chromium tests inject into each page (test/chromium), and the certified
# OpenID clients that test the OpenID provider (test/oidcflow).
NODE_DIR = test/node

## node-deps: install the pinned packages of $(NODE_DIR) (npm ci) when they are missing or
## the lock file changed since; part of `make test`. Without npm, or when npm ci fails
## outside CI, it says so and goes on: the suites that need them then skip (they fail when CI=true)
node-deps:
	@lock=$$(sha256sum $(NODE_DIR)/package-lock.json | cut -d' ' -f1); 	if [ "$$(cat $(NODE_DIR)/node_modules/.userd-lock 2>/dev/null)" = "$$lock" ]; then exit 0; fi; 	if ! command -v npm >/dev/null 2>&1; then 		echo "node-deps: npm is missing: the accessibility checks and the OpenID client tests skip (or fail when CI=true)"; exit 0; fi; 	echo "node-deps: installing $(NODE_DIR)/package-lock.json into $(NODE_DIR)/node_modules"; 	if npm ci --prefix $(NODE_DIR) --no-audit --no-fund --loglevel=error; then echo "$$lock" >$(NODE_DIR)/node_modules/.userd-lock; else 		echo "node-deps: npm ci failed: the accessibility checks and the OpenID client tests skip (or fail when CI=true)"; [ "$$CI" != true ]; fi

## axe-deps: the former name of node-deps
axe-deps: node-deps

# GOLANGCI_LINT runs golangci-lint at the version pinned in test/tools/go.mod
# (built from source by the Go toolchain on first use, then cached).
GOLANGCI_LINT ?= $(GO) tool -modfile=test/tools/go.mod golangci-lint

## lint: gofmt, vet, and golangci-lint (.golangci.yml: staticcheck, errcheck, gosec,
## revive, depguard rules that hold the layers); zero findings
lint:
	@out="$$(gofmt -l $$(git ls-files '*.go'))"; if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GOLANGCI_LINT) run ./...

## bench: micro-benchmarks of the hot paths
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# SOAK_DURATION is how long `make soak` runs its mixed load.
SOAK_DURATION ?= 10m

## faults: the fault-injection suite, cases 1-5 of test/faults (PostgreSQL outage, SIGKILL
## during writes, SIGTERM under load, overload, slow and hostile clients): real binaries and
## a private PostgreSQL cluster made with initdb; about 2 minutes. CI runs it after `make test`
faults:
	USERD_FAULTS=1 $(GO) test -count=1 -v -timeout 15m -skip '^TestSoak$$' ./test/faults

## soak: SOAK_DURATION (default 10m) of mixed load, sampling goroutines, open files and heap
## every 10 s; not in CI (`make soak SOAK_DURATION=1m` for a short one)
soak:
	USERD_SOAK=1 USERD_SOAK_DURATION=$(SOAK_DURATION) $(GO) test -count=1 -v -timeout 2h -run '^TestSoak$$' ./test/faults

## loadtest: the load harness (bench/load): builds and starts userd on SQLite,
## seeds users, runs every scenario (mfa, passkey and the OpenID provider's
## oidc-* included) at concurrency 1,4,16,64 with the reference points; table
## on stdout, JSON and SVG in bench/results/ (about 5 minutes on a quiet machine).
## LOADTEST_FLAGS='--db both' adds PostgreSQL (USERD_TEST_POSTGRES_DSN); '--db all'
## adds MariaDB/MySQL too (USERD_TEST_MYSQL_DSN), with the MariaDB ÷ PostgreSQL refresh row;
## '--profile DIR' saves CPU and allocation profiles of each scenario at concurrency 16
LOADTEST_FLAGS ?=
loadtest:
	$(GO) run ./bench/load $(LOADTEST_FLAGS)

## postman: run docs/userd.postman_collection.json with newman (from npm)
## against a freshly started userd (test/postman/run.sh; part of .ci/run)
postman:
	bash test/postman/run.sh

## purgeload: purge a million expired sessions on SQLite (and on PostgreSQL
## with USERD_TEST_POSTGRES_DSN) while workers refresh, and print the
## refreshes' p99 with and without the purge (docs/performance.md); not
## part of make test, which runs the same test with 20,000
purgeload:
	USERD_PURGE_LOAD_N=$${USERD_PURGE_LOAD_N:-1000000} $(GO) test -count=1 -timeout 30m -run '^TestPurgeUnderLoad$$' -v ./adapters/gormstore/

## peerload: side by side with GoTrue by wrk (bench/peer/run.sh): builds
## bin/userd, then runs userd and, with GOTRUE=/path/to/auth (built by hand,
## docs/performance.md), GoTrue, one at a time on the scratch database
## PEER_DSN (default USERD_TEST_POSTGRES_DSN) with 10,000 users; prints
## req/s, p99, errors and RSS and the ratios against issues 17's and 30's
## goals, read-many over 20,000 distinct tokens among them (about 6
## minutes); needs wrk, psql, curl, openssl
PEER_DSN ?= $(USERD_TEST_POSTGRES_DSN)
GOTRUE   ?=
peerload: build
	@test -n "$(PEER_DSN)" || { echo "peerload: set PEER_DSN or USERD_TEST_POSTGRES_DSN"; exit 2; }
	bash bench/peer/run.sh $(BIN) '$(PEER_DSN)' $(GOTRUE)

## common-passwords: regenerate domain/common_passwords.txt from the zxcvbn
## npm package (MIT): its 30,000 most common passwords, those of 8+ characters
## (shorter ones fail the length rule anyway), plus our own additions
common-passwords:
	tmp=$$(mktemp -d) && cd $$tmp && npm pack zxcvbn@4.4.2 --silent >/dev/null && tar xzf zxcvbn-4.4.2.tgz && \
	node -e 'const s = require("fs").readFileSync("package/lib/frequency_lists.js", "utf8"); for (const p of s.match(/passwords: "([^"]*)"/)[1].split(",")) if ([...p].length >= 8) console.log(p)' > $$tmp/zxcvbn.txt && \
	cd $(CURDIR) && { sed -n '1,/^# --- zxcvbn/p' domain/common_passwords.txt; cat $$tmp/zxcvbn.txt; } > $$tmp/out.txt && \
	mv $$tmp/out.txt domain/common_passwords.txt && rm -rf $$tmp

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin

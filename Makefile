# userd — developer commands. `make run` and `make test` work on a fresh
# machine with Go (and gcc, for the embedded SQLite driver) installed.

GO          ?= go
BIN         ?= bin/userd
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT      ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS     := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)
GOTESTFLAGS ?=
FUZZTIME    ?= 30s

.PHONY: run build test lint bench fmt tidy clean common-passwords

## run: start the service on the embedded SQLite default (./userd.db, :8080)
run: build
	./$(BIN) serve

## build: compile bin/userd
build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/userd

## test: gofmt and vet, then the whole test suite (PostgreSQL tests need USERD_TEST_POSTGRES_DSN)
test: lint
	$(GO) test -count=1 -race $(GOTESTFLAGS) ./...

## lint: formatting and vet
lint:
	@out="$$(gofmt -l $$(git ls-files '*.go'))"; if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

## bench: micro-benchmarks of the hot paths
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

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

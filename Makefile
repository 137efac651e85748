# userd — developer commands. `make run` and `make test` work on a fresh
# machine with Go (and gcc, for the embedded SQLite driver) installed.

GO          ?= go
BIN         ?= bin/userd
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT      ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS     := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)
GOTESTFLAGS ?=
FUZZTIME    ?= 30s

.PHONY: run build test lint bench fmt tidy clean

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

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin

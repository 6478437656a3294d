# The two commands that do everything on a fresh machine:
#   make demo   runs the example suite in local mode (embedded NATS, coordinator, workers, Docker)
#   make test   runs every test, with real Docker and an in-process nats-server
GO       ?= go
BIN      := bin
SKILLFLEET := $(BIN)/skillfleet

.PHONY: all build demo test sandbox lint fuzz bench generate clean

all: build

build:
	$(GO) build -o $(BIN)/ ./cmd/...

sandbox: build
	$(SKILLFLEET) sandbox build

demo: sandbox
	$(SKILLFLEET) test --workers 4 examples/skills

test: sandbox
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 25m ./...

lint:
	test -z "$$(gofmt -l $$(git ls-files '*.go'))"
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime 60s ./skill/

bench: build
	$(SKILLFLEET) bench --out BENCHMARKS.md

generate:
	$(GO) generate ./proto

clean:
	rm -rf $(BIN)

# The two commands that do everything on a fresh machine:
#   make demo   runs the example suite in local mode (embedded NATS, coordinator, workers, Docker)
#   make test   runs every test, with real Docker and an in-process nats-server
GO       ?= go
# The Go release every target builds and tests with: go1.26.8, the machine's own, has 12
# standard-library vulnerabilities fixed in go1.26.9 and go1.26.10 (govulncheck v1.9.0 against
# the Go vulnerability database of 2026-11-05: none with go1.26.10). The go command fetches it
# through the module proxy once; GOTOOLCHAIN=local make ... keeps the machine's.
GOTOOLCHAIN ?= go1.26.10
export GOTOOLCHAIN
BIN      := bin
SKILLFLEET := $(BIN)/skillfleet

.PHONY: all build deps demo test sandbox lint fuzz bench generate check-generated check-helm image clean

all: build

build:
	$(GO) build -o $(BIN)/ ./cmd/...

# deps installs the Debian packages the image build and the tests need (.ci/deps).
deps:
	.ci/deps

sandbox: build deps
	$(SKILLFLEET) sandbox build

# MODEL (with OPENAI_BASE_URL, and OPENAI_API_KEY where the endpoint needs one) names the model
# the example suite's prompt cases run against, and judges them unless JUDGE_MODEL is set.
# Without it, demo runs the cases that need no model and says how to run the others.
MODEL       ?=
JUDGE_MODEL ?= $(MODEL)
# API is the protocol of MODEL's endpoint: openai, anthropic (ANTHROPIC_API_KEY) or gemini
# (GEMINI_API_KEY).
API         ?= openai

demo: sandbox
ifeq ($(strip $(MODEL)),)
	$(SKILLFLEET) test --workers 4 --kind command examples/skills
	@echo "demo: the prompt cases need a model and were not run; run them too with: make demo MODEL=<model> OPENAI_BASE_URL=<endpoint> [OPENAI_API_KEY=<key>]"
else
	OPENAI_BASE_URL="$(OPENAI_BASE_URL)" OPENAI_API_KEY="$(OPENAI_API_KEY)" \
		$(SKILLFLEET) test --workers 4 --api "$(API)" --model "$(MODEL)" --judge-model "$(JUDGE_MODEL)" examples/skills
endif

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
	$(BIN)/skillfleet-bench --out BENCHMARKS.md

# protoc comes from Debian (protobuf-compiler); the plugin is pinned to the runtime's version.
generate:
	GOBIN=$(CURDIR)/$(BIN) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
	PATH=$(CURDIR)/$(BIN):$$PATH $(GO) generate ./proto

# check-generated fails when the committed Go code is not what the .proto files generate.
check-generated: generate
	git diff --exit-code -- proto/

# check-helm lints and renders deploy/helm against its goldens (go test -tags helm).
HELM_VERSION ?= v3.19.2
check-helm:
	test -x $(BIN)/helm || GOBIN=$(CURDIR)/$(BIN) $(GO) install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)
	$(GO) vet -tags helm ./deploy/helm
	HELM=$(CURDIR)/$(BIN)/helm $(GO) test -tags helm -count=1 ./deploy/helm

# image builds the daemons' image (deploy/docker/Dockerfile) from static binaries; no registry.
IMAGE ?= skillfleet/skillfleet:dev
image:
	rm -rf $(BIN)/image && mkdir -p $(BIN)/image
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w' -o $(BIN)/image/ ./cmd/coordinator ./cmd/worker ./cmd/skillfleet
	cp /etc/ssl/certs/ca-certificates.crt $(BIN)/image/
	docker build -f deploy/docker/Dockerfile -t $(IMAGE) $(BIN)/image

clean:
	rm -rf $(BIN)

# warden's build. `make build` needs only Go; `make demo` and `make test`
# install what they need (bubblewrap, strace, git) when it is missing.
GO      ?= go
BIN     := bin
PLUGINS := workspace scorer seal bubblewrap strace
VERSION ?= 0.1.0-dev
LDFLAGS := -s -w -X main.version=$(VERSION)

.PHONY: all build deps demo test test-unit test-unprivileged test-darwin lint bench proto clean

all: build

build:
	@mkdir -p $(BIN)
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/warden ./cmd/warden
	$(GO) build -trimpath -ldflags '-s -w' -o $(BIN)/warden-supervise ./cmd/warden-supervise
	$(GO) build -trimpath -ldflags '-s -w' -o $(BIN)/warden-bwrap-shim ./plugins/bubblewrap/shim
	@for p in $(PLUGINS); do \
		echo "$(GO) build -o $(BIN)/warden-plugin-$$p ./plugins/$$p"; \
		$(GO) build -trimpath -ldflags '-s -w' -o $(BIN)/warden-plugin-$$p ./plugins/$$p || exit 1; \
	done

deps:
	@sh scripts/deps.sh

# The main job on the shipped demo pipeline.
demo: deps build
	$(BIN)/warden run pipelines/demo.yaml

# Everything CI proves: formatting, vet and staticcheck (Linux and darwin),
# the darwin build, the whole test suite against the built binaries, and,
# run as root, the host-touching suites again as an unprivileged user.
test: deps build lint test-darwin test-unit test-unprivileged

STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
		if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	GOBIN=$(CURDIR)/$(BIN)/tools $(GO) install $(STATICCHECK)
	$(BIN)/tools/staticcheck ./...

test-darwin: lint
	GOOS=darwin $(GO) build ./...
	GOOS=darwin $(GO) vet ./...
	@# Code only Linux calls is unused on darwin by construction; the Linux
	@# run above catches code that is unused everywhere.
	GOOS=darwin $(BIN)/tools/staticcheck -checks inherit,-U1000 ./...

test-unit:
	WARDEN_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 -timeout 10m ./...

test-unprivileged: build
	@if [ "$$(id -u)" = 0 ]; then sh scripts/test-unprivileged.sh; \
	else echo "test-unprivileged: already unprivileged; the suite above ran as $$(id -un)"; fi

bench: build
	WARDEN_BIN=$(CURDIR)/$(BIN) $(GO) test -run '^$$' -bench . -benchtime 20x ./core/... ./cmd/...

proto:
	@WARDEN_NEED_PROTOC=1 sh scripts/deps.sh
	$(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
	$(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.0
	cd core/proto && PATH="$$($(GO) env GOPATH)/bin:$$PATH" protoc \
		--go_out=paths=source_relative:. --go-grpc_out=paths=source_relative:. \
		wardenplugin/v1/plugin.proto

clean:
	rm -rf $(BIN)

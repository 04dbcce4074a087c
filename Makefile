# Every target is one line; the logic lives in scripts/.
GO        ?= go
OUT       ?= out/demo
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS   := -X main.version=$(VERSION) -X main.commit=$(COMMIT)
T         ?= .

.PHONY: build setup demo test unit integration fuzz golden lint fmt tidy-check bench ci clean

build:        ## bin/trtmc-qual and bin/trtmc-refserver
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/ ./cmd/...

setup:        ## the project's venv with aiperf==0.13.0 and its local tokenizer
	scripts/setup-venv.sh

demo: setup build   ## the main job on the built-in reference target
	scripts/demo.sh "$(OUT)"

test:         ## every test, as CI runs it (installs what it needs)
	scripts/test.sh

unit:         ## fast tests only (no AIPerf, no browser)
	$(GO) test -race -count=1 ./...

integration: setup build   ## the real-AIPerf tier; T=regex filters
	$(GO) test -tags integration -count=1 -run '$(T)' ./...

fuzz:         ## longer fuzz runs (FUZZTIME=60s per target)
	scripts/fuzz.sh $${FUZZTIME:-60s}

golden:       ## rewrite golden files (packages using reports/golden), then review git diff
	scripts/golden.sh

lint:         ## gofmt, go vet, staticcheck, deadcode, gocyclo (tools pinned in go.mod)
	scripts/lint.sh

fmt:
	gofmt -w $$(git ls-files '*.go')

tidy-check:
	$(GO) mod tidy && git diff --exit-code go.mod go.sum

bench: setup build   ## performance figures against baselines (see docs/performance.md)
	scripts/bench.sh

ci: lint test tidy-check

clean:
	rm -rf bin out

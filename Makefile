# acp-agent. `make demo` runs a real ACP session; `make test` runs every test.
GO      ?= go
BIN     := bin
AGENT   := $(BIN)/acp-agent
# VERSION: the nearest v* tag (v1.2.0, v1.2.0-3-gabc1234 after it, -dirty with
# uncommitted changes); in a clone without tags dev-<commit>; outside git "dev".
# Computed once (:=), so a commit made during a long make dist cannot rename
# the files half-way.
ifeq ($(origin VERSION),undefined)
VERSION := $(shell git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null || \
	{ c=$$(git describe --always --dirty 2>/dev/null) && echo "dev-$$c"; } || echo dev)
endif
LDFLAGS := -X main.version=$(VERSION)
# grpcnotrace: the OTLP trace exporter links gRPC, whose golang.org/x/net/trace
# (html/template) would keep every method of every type in the binary (the
# linker's dead-code elimination gives up on reflect.Method): ~37 MB more.
TAGS    := grpcnotrace

# install puts the agent in $(BINDIR): $(PREFIX)/bin, by default the first
# GOPATH entry's bin ($$HOME/go/bin), where `go install` puts programs too.
ifeq ($(origin PREFIX),undefined)
PREFIX  := $(firstword $(subst :, ,$(shell $(GO) env GOPATH)))
endif
BINDIR  ?= $(PREFIX)/bin

# dist: static (CGO_ENABLED=0), stripped (-s -w), reproducible (-trimpath, no
# build ID, the version from git) release binaries, one per platform, in $(DIST),
# with SHA256SUMS. The same commit and Go toolchain give the same bytes.
DIST      ?= dist
PLATFORMS := linux-amd64 linux-arm64 darwin-amd64 darwin-arm64
DISTFLAGS := -trimpath -buildvcs=false -tags $(TAGS) -ldflags "-s -w -buildid= $(LDFLAGS)"

.PHONY: build install dist version test unit e2e-deps pg-deps bench demo lint fmt tidy-check fuzz clean

# build-agent builds the agent into $(1) as a release build (make dist) does
# for this platform: static, stripped, reproducible, versioned. It prints what
# it builds, the modules go downloads, a line every 50 packages compiled (a
# first build compiles about 430; cached ones are not counted), and every 10 s
# the package compiled last (one, SQLite's, takes minutes alone); the
# compiler's errors as they are. A background loop (killed by its PID when go
# build ends) feeds awk the 10 s ticks. The status is go build's.
define build-agent
	@echo "building $(1): acp-agent $(VERSION) for $$($(GO) env GOOS)/$$($(GO) env GOARCH), static (CGO_ENABLED=0 -trimpath)"
	@echo "  a first build downloads the Go modules and compiles about 430 packages: several minutes on 2 cores; later builds take seconds"
	@{ (while sleep 10; do echo "build-agent tick"; done) & tick=$$!; \
	   CGO_ENABLED=0 $(GO) build -v $(DISTFLAGS) -o "$(1)" ./cmd/acp-agent 2>&1; status=$$?; \
	   kill $$tick; echo "go build exit $$status"; } | \
		awk '/^go build exit [0-9]+$$/ { if (n && $$4 == 0) printf "  compiled %d packages\n", n; exit $$4 } \
		     /^build-agent tick$$/ { t += 10; if (n) printf "  %ds: compiled %d packages, the last %s\n", t, n, last; else printf "  %ds: compiling\n", t; fflush(); next } \
		     /^[A-Za-z0-9_.~+\/-]+$$/ { n++; last = $$0; if (n % 50 == 0) { printf "  compiled %d packages (%s)\n", n, $$0; fflush() }; next } \
		     { print; fflush() }'
endef

# build makes bin/acp-agent, the same binary as make install and make dist.
build:
	@mkdir -p $(BIN)
	$(call build-agent,$(AGENT))

# install builds the agent into $(DESTDIR)$(BINDIR)/acp-agent, as make dist
# builds it for this platform. The binary is replaced by a rename, so an
# editor running the old one is not disturbed.
install:
	@mkdir -p "$(DESTDIR)$(BINDIR)"
	$(call build-agent,$(DESTDIR)$(BINDIR)/.acp-agent.tmp)
	@mv -f "$(DESTDIR)$(BINDIR)/.acp-agent.tmp" "$(DESTDIR)$(BINDIR)/acp-agent"
	@echo "installed $(DESTDIR)$(BINDIR)/acp-agent ($(VERSION))"
	@case ":$$PATH:" in *":$(BINDIR):"*) ;; *) echo "note: $(BINDIR) is not on PATH; add it: export PATH=\"$(BINDIR):\$$PATH\"";; esac

# dist also packs each binary as acp-agent-$(VERSION)-<os>-<arch>.tar.gz (the
# binary named acp-agent, reproducible) and writes $(DIST)/registry/acp-agent/
# agent.json and icon.svg, the entry of Zed's ACP registry
# (github.com/agentclientprotocol/registry), whose archives are downloaded
# from $(RELEASE_URL). internal/acpregistry does both; its test validates the
# entry against the registry's schema.
RELEASE_URL ?= https://github.com/seed02d3eb6b/acp-agent/releases/download/$(VERSION)
DISTBINS = $(foreach p,$(PLATFORMS),acp-agent-$(VERSION)-$(p))
DISTFILES = $(DISTBINS) $(addsuffix .tar.gz,$(DISTBINS))
dist: $(addprefix $(DIST)/,$(DISTBINS))
	$(GO) run ./internal/acpregistry -dist $(DIST) -version $(VERSION) -release-url $(RELEASE_URL) $(PLATFORMS)
	cd $(DIST) && if command -v sha256sum >/dev/null 2>&1; then sha256sum $(DISTFILES); \
		else shasum -a 256 $(DISTFILES); fi > SHA256SUMS.tmp && mv SHA256SUMS.tmp SHA256SUMS
	@cat $(DIST)/SHA256SUMS
	@echo "registry entry: $(DIST)/registry/acp-agent/agent.json and icon.svg (archives from $(RELEASE_URL))"

# One release binary: make dist/acp-agent-$(VERSION)-linux-arm64.
$(DIST)/acp-agent-$(VERSION)-%: FORCE
	@mkdir -p $(DIST)
	CGO_ENABLED=0 GOOS=$(word 1,$(subst -, ,$*)) GOARCH=$(word 2,$(subst -, ,$*)) \
		$(GO) build $(DISTFLAGS) -o $@ ./cmd/acp-agent

version:
	@echo $(VERSION)

# e2e-deps installs the pinned npm packages of the e2e suite (MCP servers, acpx)
# from the committed lockfile.
e2e/node_modules/.package-lock.json: e2e/package.json e2e/package-lock.json
	cd e2e && npm ci --no-audit --no-fund --loglevel=error
e2e-deps: e2e/node_modules/.package-lock.json

# pg-deps makes sure PostgreSQL's server programs are installed: the
# PostgreSQL store's tests (internal/pgtest) run a throwaway server from
# them. initdb is looked for in PATH and /usr/lib/postgresql/*/bin (Debian);
# when missing, root installs Debian's postgresql package, anyone else is
# told what to install.
pg-deps:
	@if command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "pg-deps: installing PostgreSQL (apt-get install postgresql) for the PostgreSQL store's tests"; \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql; \
	else \
		echo "pg-deps: PostgreSQL is not installed (no initdb in PATH or /usr/lib/postgresql/*/bin), and the tests need it:" >&2; \
		echo "  install it as root: apt-get install postgresql (Debian/Ubuntu), or put a PostgreSQL's bin directory (initdb, postgres) on PATH" >&2; \
		exit 1; \
	fi

# gotestsum runs `go test -json` and prints progress as tests finish; it is
# one of the module's tools (the tool directive in go.mod pins its version).
GOTESTSUM := $(GO) tool gotestsum
# TESTFORMAT is gotestsum's --format (testname: a line per test as it ends,
# with its time; pkgname: a line per package); SLOWEST is the threshold of
# the slowest-tests list printed at the end.
TESTFORMAT ?= testname
SLOWEST    ?= 10s
# TESTPKGS are the packages `make test` runs (all of them by default), e2e
# first: it takes most of the run, and go test starts packages in the order
# given (GOMAXPROCS of them at once), so the others run beside it.
TESTPKGS   ?= ./e2e ./...
# TESTPARALLEL is go test's -parallel: how many t.Parallel tests of one
# package run at once (go test's default is GOMAXPROCS). Most e2e tests
# spend their time waiting on child processes (the agent, node servers)
# rather than computing, so twice the cores keeps the CPUs busy.
TESTPARALLEL ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 2) * 2 )))

# test runs every test, e2e included, with the race detector. While it runs,
# internal/testprogress prints a line as each package starts and, every
# $(PROGRESS), the packages still running with their longest-running tests;
# gotestsum prints each test and package as it ends, with its time, and the
# failures' output. Then the tests slower than $(SLOWEST). It fails if any
# test fails. bin/test.json keeps the events.
PROGRESS ?= 10s
test: e2e-deps pg-deps
	@mkdir -p $(BIN)
	@echo "make test: building the test binaries, then running $(TESTPKGS) with -race (under 5 minutes on 2 idle cores, the build cache warm)"
	@$(GO) build -o $(BIN)/testprogress ./internal/testprogress
	@$(BIN)/testprogress -every $(PROGRESS) -module $$($(GO) list -m) \
		-view "$(GOTESTSUM) --format $(TESTFORMAT) --format-hide-empty-pkg --jsonfile $(BIN)/test.json --raw-command -- cat" \
		-- $(GO) test -json -race -count=1 -timeout 20m -parallel $(TESTPARALLEL) $(TESTPKGS); status=$$?; \
	echo "Tests slower than $(SLOWEST):"; \
	$(GOTESTSUM) tool slowest --jsonfile $(BIN)/test.json --threshold $(SLOWEST); \
	exit $$status

unit: pg-deps
	$(GO) test -race -count=1 $(shell $(GO) list ./... | grep -v /e2e)

# INPROCESS is how many sessions with the built-in server only
# BenchmarkSessionsInProcess opens: make bench INPROCESS=10000 for the
# 10,000 of the goals (about 45 s more, 1 GiB).
INPROCESS ?= 1000
bench: e2e-deps pg-deps
	@mkdir -p $(BIN)
	$(GO) test -run '^$$' -bench 'BenchmarkCall$$|FirstChunk' -benchtime 2000x -count 1 ./e2e | tee $(BIN)/bench.txt
	$(GO) test -run '^$$' -bench 'Load500' -benchtime 20x -count 1 ./e2e | tee -a $(BIN)/bench.txt
	$(GO) test -run '^$$' -bench 'GatewayLoad' -benchtime 1x -count 1 ./e2e | tee -a $(BIN)/bench.txt
	$(GO) test -run '^$$' -bench 'ReadFile' -benchtime 2000x -count 1 ./bridge/builtin | tee -a $(BIN)/bench.txt
	$(GO) test -run '^$$' -bench 'ConfinedStart' -benchtime 300x -count 1 ./e2e | tee -a $(BIN)/bench.txt
	$(GO) test -run '^$$' -bench 'SessionNew10|CloseChildrenGone|EOFExit' -benchtime 5x -count 1 ./e2e | tee -a $(BIN)/bench.txt
	$(GO) test -run '^$$' -bench 'BenchmarkIdleSession$$' -benchtime 50x -count 1 ./e2e | tee -a $(BIN)/bench.txt
	$(GO) test -run '^$$' -bench 'BenchmarkSessions$$' -benchtime 1x -count 1 -timeout 30m ./e2e | tee -a $(BIN)/bench.txt
	ACP_BENCH_INPROCESS=$(INPROCESS) $(GO) test -run '^$$' -bench 'BenchmarkSessionsInProcess$$' -benchtime 1x -count 1 -timeout 30m ./e2e | tee -a $(BIN)/bench.txt
	$(GO) test -run '^$$' -bench 'BenchmarkEconomy' -benchtime 1x -count 1 ./gateway/runner | tee -a $(BIN)/bench.txt
	$(GO) test -run '^$$' -bench 'BenchmarkHistoryAppend|BenchmarkSQLiteAppendTurn' -benchtime 4000x -count 1 ./session ./session/store/sqlite | tee -a $(BIN)/bench.txt
	@echo; echo "== summary ($$(nproc) cores, $$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'))"
	@awk '{ sub(/-[0-9]+$$/, "", $$1) } \
		$$1 ~ /^BenchmarkCall\// { split($$1, k, "/"); ns[k[2] " " k[3] " " k[4]] = $$3; if ($$6 == "agent-cpu-us/op") cpu[k[2] " " k[3] " " k[4]] = $$5; if (!((k[2] " " k[3]) in seen)) { seen[k[2] " " k[3]] = 1; order[++n] = k[2] " " k[3] } } \
		$$1 == "BenchmarkFirstChunk" {fa=$$5} $$1 == "BenchmarkFirstChunkDirect" {fd=$$5} \
		$$1 == "BenchmarkLoad500Turns" {l=$$3} \
		$$1 ~ /^BenchmarkGatewayLoad\// { split($$1, k, "/"); gl[k[2]] = $$0 } \
		$$1 == "BenchmarkReadFileBridged" {rb=$$3} $$1 == "BenchmarkReadFileDirect" {rd=$$3} \
		$$1 == "BenchmarkConfinedStart/plain" {cp=$$3} $$1 == "BenchmarkConfinedStart/confined" {cc=$$3} \
		$$1 == "BenchmarkHistoryAppend/sessions=1" {d1=$$5} $$1 == "BenchmarkHistoryAppend/sessions=32" {d32=$$5} \
		$$1 == "BenchmarkSQLiteAppendTurn" {st=$$5; both=$$3} \
		END { raw = ns["stdio 2025-11-25 raw"]; \
		      for (i = 1; i <= n; i++) { g = order[i]; b = ns[g " bridged"]; d = ns[g " direct"]; m = ns[g " bridged-memory"]; \
		        if (!b || !d) continue; \
		        printf "tools/call, %s: bridged/direct %.2fx (goal <= 1.5x; %.0f us through the agent, SQLite store, vs %.0f us go-sdk direct", g, b/d, b/1000, d/1000; \
		        if (m) printf "; --store memory %.0f us, %.2fx (goal <= 1.3x)", m/1000, m/d; \
		        if (cpu[g " bridged"]) printf "; agent CPU per turn %.0f us, %.0f us with --store memory", cpu[g " bridged"], cpu[g " bridged-memory"]; \
		        w = ns[g " bridged-websocket"]; if (w) printf "; over WebSocket to a gateway %.0f us, %.2fx stdio", w/1000, w/b; \
		        if (raw && g == "stdio 2025-11-25") printf "; raw pipe floor %.0f us, bridged/raw %.2fx", raw/1000, b/raw; \
		        rl = ns[g " relay"]; if (rl) printf "; through a process that only passes lines %.0f us (the floor of any process between: direct %.2fx it, --store memory %.2fx it)", rl/1000, d/rl, m/rl; \
		        sf = ns[g " sdk-floor"]; if (sf) printf "; an agent that only runs acp-go-sdk and go-sdk (testfixtures/sdkfloor) %.0f us, %.2fx direct, agent CPU %.0f us (the floor of bridged: SQLite %.2fx it, --store memory %.2fx it)", sf/1000, sf/d, cpu[g " sdk-floor"], b/sf, m/sf; \
		        printf ")\n" } \
		      if (fa && fd) printf "first agent_message_chunk: the agent adds %.0f us to the first delta of the provider (%.0f us vs %.0f us)\n", (fa-fd)/1000, fa/1000, fd/1000; \
		      if (l) printf "session/load of a 500-turn session: %.1f ms\n", l/1e6; \
		      for (gk in gl) { split(gl[gk], f, " "); line = "gateway, 200 WebSocket clients x 20 /call turns, " gk ":"; for (i = 5; i < length(f); i += 2) line = line " " f[i] " " f[i+1]; print line } \
		      if (rb && rd) printf "built-in read_file: the in-process MCP hop adds %.0f us (%.0f us bridged vs %.0f us direct)\n", (rb-rd)/1000, rb/1000, rd/1000; \
		      if (cp && cc) printf "confining a process start (Landlock, through the agent binary as launcher): %.2f ms vs %.2f ms plain, +%.2f ms\n", cc/1e6, cp/1e6, (cc-cp)/1e6; \
		      if (st) printf "a stored turn (SQLite, what the response waits for): %.0f us (goal <= 50 us); with the session record after the response, %.0f us\n", st, both/1000; \
		      if (d1 && d32) printf "durability: the response to a prompt waits for the SQLite commit of its turn, through the History: %.0f us alone, %.0f us per turn with 32 sessions (group commit: goal, below alone)\n", d1, d32 }' $(BIN)/bench.txt
	@awk '{ name = $$1; sub(/-[0-9]+$$/, "", name); sub(/^Benchmark/, "", name) } \
		name ~ /^(SessionNew10|CloseChildrenGone|EOFExit|IdleSession|Sessions|Economy)/ { \
		  line = name ":"; for (i = 5; i < NF; i += 2) line = line " " $$(i+1) " " $$i; print line } \
		name ~ /^EconomyContext\// { split(name, k, "/"); for (i = 5; i < NF; i += 2) if ($$(i+1) == "USD") usd[k[2]] = $$i; order[++n] = k[2] } \
		END { if (!("agent" in usd)) exit; line = "context strategies, one 200-turn Anthropic session of 20 KB results (fake tokens, list prices):"; \
		      for (i = 1; i <= n; i++) { s = order[i]; line = line sprintf(" %s $$%.2f", s, usd[s]); \
		        if (s != "agent" && usd["agent"] > 0) line = line sprintf(" (%+.0f%%)", 100*(usd[s]-usd["agent"])/usd["agent"]); if (i < n) line = line "," } \
		      print line }' $(BIN)/bench.txt
	@awk '{ name = $$1; sub(/-[0-9]+$$/, "", name); delete m; for (i = 5; i < NF; i += 2) m[$$(i+1)] = $$i } \
		function per(n) { return sprintf("%.0f KiB RSS, %.0f KiB heap, %.1f goroutines and %.2f OS threads per session", m["rss-KiB/session"], m["heap-KiB/session"], m["goroutines/session"], m["threads/session"]) } \
		function count(n) { return n == 1000 ? "1,000" : (n == 10000 ? "10,000" : n) } \
		name == "BenchmarkIdleSession" { printf "idle session, one stdio server, %d sessions: %s (the goal, 100 KiB, is at 500 and 1,000: below)\n", $$2, per() } \
		name ~ /^BenchmarkSessions\/[0-9]+$$/ { split(name, k, "/"); printf "idle session, one stdio server, %s sessions: %s (goal <= 100 KiB RSS and heap); open all %.1f s, close all %.1f s\n", count(k[2]), per(), m["open-all-s"], m["close-all-s"] } \
		name ~ /^BenchmarkSessionsInProcess\/[0-9]+$$/ { split(name, k, "/"); printf "%s idle sessions with the built-in server only: open all %.1f s (goal <= 10 s at 10,000), a first call in each %.1f s, close all %.1f s (goal <= 5 s), agent RSS %.0f MiB (goal < 1,024 MiB at 10,000), %s, nothing left after closing\n", count(k[2]), m["open-all-s"], m["use-all-s"], m["close-all-s"], m["rss-MiB"], per() }' $(BIN)/bench.txt

$(BIN)/mcp-fixture: FORCE
	$(GO) build -o $@ ./testfixtures/mcpserver

demo: build e2e-deps $(BIN)/mcp-fixture
	$(GO) run ./cmd/acp-demo --agent $(AGENT) --fixture $(BIN)/mcp-fixture \
		--fs-server e2e/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js

FORCE:

fuzz:
	$(GO) test ./acp -run '^$$' -fuzz FuzzParseMCPServers -fuzztime 30s
	$(GO) test ./bridge -run '^$$' -fuzz FuzzBridgedNames -fuzztime 30s
	$(GO) test ./acp/connect -run '^$$' -fuzz FuzzSessionTable_Rewrite -fuzztime 30s
	$(GO) test ./mcpserver -run '^$$' -fuzz FuzzStdioTransport -fuzztime 30s
	$(GO) test ./internal/jsonrpcid -run '^$$' -fuzz FuzzExact -fuzztime 30s

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1)
	@test -z "$$($(GO) run golang.org/x/tools/cmd/goimports@v0.52.0 -l -local github.com/seed02d3eb6b $$(git ls-files '*.go'))" || \
		($(GO) run golang.org/x/tools/cmd/goimports@v0.52.0 -l -local github.com/seed02d3eb6b $$(git ls-files '*.go'); echo "imports need grouping: make fmt"; exit 1)
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

fmt:
	gofmt -w $$(git ls-files '*.go')
	$(GO) run golang.org/x/tools/cmd/goimports@v0.52.0 -w -local github.com/seed02d3eb6b $$(git ls-files '*.go')

tidy-check:
	$(GO) mod tidy -diff

clean:
	rm -rf $(BIN) $(DIST) e2e/node_modules

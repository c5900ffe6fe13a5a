// Command acp-agent is an ACP (Agent Client Protocol) agent that bridges the
// MCP servers an editor passes at session/new into the agent's tool set, for
// that session only.
//
// Usage:
//
//	acp-agent [--config FILE] [--model provider:name] [--store FILE|memory|postgres://…]
//	          [--verbose] [--log-file FILE] [--version]
//	acp-agent connect [--token-file FILE] [--config FILE] URL
//	acp-agent mcp-server [--config FILE] [--model provider:name|direct] [--store FILE|memory|postgres://…]
//	                     [--listen HOST:PORT [--token-file FILE] [--allowed-origins LIST]] [-v] [--log-file FILE] [--version]
//	acp-agent gateway [--listen HOST:PORT] [--token-file FILE] [--tokens-file FILE] [--store FILE|memory|postgres://…]
//	                  [--replica-name NAME] [--allowed-origins LIST] [--tls-cert FILE --tls-key FILE] [--config FILE] [--model ...]
//
// With no subcommand it speaks ACP on stdin/stdout. stdout carries ACP frames
// only; logs go to stderr, or to --log-file. "mcp-server" serves the same
// agent to MCP clients as one tool, ask_agent, on stdio or Streamable HTTP;
// "gateway" serves ACP over the network (Streamable HTTP and WebSocket at
// /acp), and "connect" is the editor's stdio end of it. "acp-agent
// --help" (and "acp-agent <subcommand> --help") describes them all; run at a
// terminal, the agent says what it is and exits 2.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/exp/zapslog"
	"go.uber.org/zap/zapcore"

	"github.com/seed02d3eb6b/acp-agent/acp"
	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
	"github.com/seed02d3eb6b/acp-agent/internal/metrics"
	"github.com/seed02d3eb6b/acp-agent/sandbox/confine"
	"github.com/seed02d3eb6b/acp-agent/sandbox/process"
	"github.com/seed02d3eb6b/acp-agent/session"
	"github.com/seed02d3eb6b/acp-agent/session/store"
	"github.com/seed02d3eb6b/acp-agent/session/store/memory"
	"github.com/seed02d3eb6b/acp-agent/session/store/postgres"
	"github.com/seed02d3eb6b/acp-agent/session/store/sqlite"
	"github.com/seed02d3eb6b/acp-agent/signin"
)

// version is set with -ldflags "-X main.version=..."; otherwise the module
// version from the build info is used.
var version = ""

func main() {
	// A confined child (sandbox/confine) starts as this binary: it restricts
	// itself and execs its command here, before anything else runs.
	confine.Main()
	gcFloor(gcHeadroom)
	releaseWhenIdle(idleCheck) // for the process's life
	// A write to a closed stdout or stderr (the editor went away) must fail
	// as an error, which ends the connection and with it every session and
	// server, not kill the agent with SIGPIPE, Go's default for fds 1 and 2.
	// Notify, not Ignore: a handled signal is reset at exec, so the MCP
	// servers the agent starts keep SIGPIPE's default; an ignored one
	// would be inherited.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	if err := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		var code exitError
		if errors.As(err, &code) {
			os.Exit(int(code))
		}
		fmt.Fprintln(os.Stderr, "acp-agent:", gateway.ErrorText(err))
		os.Exit(1)
	}
}

func agentVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "help" {
		// "acp-agent help" is --help; "acp-agent help <subcommand>" its --help.
		if len(args) > 1 {
			sc, ok := lookupSubcommand(args[1])
			if !ok {
				return unknownSubcommand(args[1])
			}
			return sc.run([]string{"--help"}, stdin, stdout, stderr)
		}
		args = []string{"--help"}
	}
	if len(args) > 0 {
		if sc, ok := lookupSubcommand(args[0]); ok {
			return sc.run(args[1:], stdin, stdout, stderr)
		}
	}
	fs := flag.NewFlagSet("acp-agent", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned (main prints them once), help goes to stdout
	common := addCommonFlags(fs)
	showVersion := fs.Bool("version", false, "print the version and exit")
	storeFlag := fs.String("store", "", `the session store: a SQLite file, "memory", or a postgres:// URL (password from PGPASSWORD or ~/.pgpass) (default $XDG_STATE_HOME/acp-agent/sessions.db)`)
	metricsAddr := fs.String("metrics-addr", "", "serve /healthz, /readyz and Prometheus /metrics on this host:port (off by default; loopback unless a token is set; port 0 picks one, logged)")
	metricsTokenFile := fs.String("metrics-token-file", "", "file holding the token /metrics asks of scrapers (default: "+metricsTokenEnv+"); needed for a non-loopback --metrics-addr")
	if err := removedGatewayFlags(args); err != nil {
		return err
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printAgentUsage(stdout, fs)
			return nil
		}
		return flagError(fs, err, "acp-agent")
	}
	if fs.NArg() > 0 {
		return unknownSubcommand(fs.Arg(0))
	}
	if *showVersion {
		// --version and --help are the only things printed on stdout outside ACP.
		fmt.Fprintln(stdout, "acp-agent", agentVersion())
		return nil
	}
	if isTerminal(stdin) {
		// A person, not an editor: say what this is rather than wait
		// silently for JSON-RPC.
		fmt.Fprint(stderr, terminalBanner)
		return exitError(2)
	}
	var metricsToken string
	if *metricsAddr != "" {
		var err error
		if metricsToken, err = listenerToken("--metrics-token-file", *metricsTokenFile, metricsTokenEnv); err != nil {
			return err
		}
		if err := checkListenFlag("--metrics-addr", *metricsAddr, metricsToken, metricsTokenEnv); err != nil {
			return err
		}
	} else if *metricsTokenFile != "" {
		return errors.New("--metrics-token-file applies only with --metrics-addr")
	}
	env, ctx, err := common.start(stderr)
	if err != nil {
		return err
	}
	defer env.close()
	log, cfg := env.log, env.cfg

	opts, err := cfg.coreOptions()
	if err != nil {
		return err
	}
	// The project's .mcp.json, approved per project in projects.json
	// beside the config file.
	if path := projectsPath(*common.config); path != "" {
		opts.ProjectApprovals = session.NewApprovals(path)
	}
	var met *metrics.Metrics // nil: no --metrics-addr
	if *metricsAddr != "" {
		met = metrics.New(nil)
		opts.Observer = met
	}
	st, tokens, err := openStore(*storeFlag, cfg.Store, log)
	if err != nil {
		return err
	}
	defer st.Close()
	opts.Store = st
	opts.Bridge.OAuth.Store = tokens
	opts.History = session.NewHistory(st, log)
	defer opts.History.Close() // before the store closes: the commits under way
	if met != nil {
		opts.History.ObserveCommits(met.StoreCommit)
	}
	ms, err := env.models()
	if err != nil {
		return err
	}
	ropts := cfg.runnerOptions(ms, opts.History, log)
	if met != nil {
		ropts.Observer = met
	}
	opts.Gateway = runner.NewLocal(ropts)
	signIn := newSignIn(env.primary, os.Getenv, env.creds) // login.go
	opts.Name, opts.Version, opts.Logger = "acp-agent", agentVersion(), log
	core := session.NewCore(&opts)
	if met != nil {
		met.ServerStates(core.ServerStates)
		cfg.observe(met)
		stopMetrics, err := startMetricsAddr(*metricsAddr, metricsToken, met, storeReady(st), log)
		if err != nil {
			return err
		}
		defer stopMetrics()
	}
	agent := acp.New(core, &acp.Options{Name: "acp-agent", Version: agentVersion(), Logger: log, SignIn: signIn})
	err = agent.Serve(ctx, stdin, stdout)
	core.Shutdown() // the sessions are the agent's: none is left; the history flushed
	log.Info("stopped")
	return err
}

// removedGatewayFlags refuses the flags of the gateway's former private
// protocol (--gateway URL, --store gateway), saying what replaces them.
func removedGatewayFlags(args []string) error {
	for i, a := range args {
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || a == "--" {
			continue
		}
		if !hasValue && i+1 < len(args) {
			value = args[i+1]
		}
		if name == "gateway" || name == "store" && value == "gateway" {
			return errors.New(`--gateway and --store gateway are gone: the gateway speaks ACP itself now; start "acp-agent connect URL" in their place (the gateway's http(s):// or ws(s):// /acp URL; README, "A shared gateway")`)
		}
	}
	return nil
}

// commonFlags are the flags of both the agent and the gateway.
type commonFlags struct {
	config, logFile, model *string
	verbose                *bool
	cpuProfile, memProfile *string
	debugAddr              *string
	auditLog               *string
	managedConfig          *string
}

func addCommonFlags(fs *flag.FlagSet) *commonFlags {
	return &commonFlags{
		config:     fs.String("config", "", "config file (default $XDG_CONFIG_HOME/acp-agent/config.json)"),
		verbose:    fs.Bool("verbose", false, "log at debug level, including MCP servers' stderr"),
		logFile:    fs.String("log-file", "", "write logs to this file instead of stderr"),
		model:      fs.String("model", "", "the default model: provider:name ("+strings.Join(modelExamples(), ", ")+"), or direct"),
		cpuProfile: fs.String("cpuprofile", "", "write a CPU profile (pprof) of the whole run to this file"),
		memProfile: fs.String("memprofile", "", "write a heap profile (pprof) to this file at exit"),
		debugAddr:  fs.String("debug-addr", "", "serve net/http/pprof (/debug/pprof/: goroutines, heap, ...) on this loopback host:port (off by default; port 0 picks one, logged)"),
		auditLog:   fs.String("audit-log", "", "append a JSON line per tool call (who, which tool, permission decision, outcome) to this file (config audit)"),
		managedConfig: fs.String("managed-config", "", "the managed policy of MCP servers: allowedMcpServers and deniedMcpServers in `FILE`; a missing or malformed FILE stops the agent (default "+
			defaultManagedPath+", if it exists)"),
	}
}

// runEnv is what setup builds from the common flags.
type runEnv struct {
	cfg      *Config
	log      *slog.Logger
	modelArg string
	close    func()
	// creds are the API keys of "acp-agent login" (keys.go); primary is the
	// configured model, set by models.
	creds   *credentials
	primary *ModelConfig
}

// setup loads the config and builds the logger.
func (c *commonFlags) setup(stderr io.Writer) (*runEnv, error) {
	required := *c.config != ""
	path := *c.config
	if !required {
		path = defaultConfigPath()
	}
	cfg, err := loadConfig(path, required)
	if err != nil {
		return nil, err
	}
	if cfg.managed, err = loadManaged(*c.managedConfig, defaultManagedPath); err != nil {
		return nil, err
	}
	logger, closeLog, err := newLogger(*c.verbose, *c.logFile, stderr)
	if err != nil {
		return nil, err
	}
	log := newSlog(logger.Core())
	log.Info("starting", "version", agentVersion(), "pid", os.Getpid())
	logManaged(cfg.managed, log)
	stopProfiles, err := startProfiles(*c.cpuProfile, *c.memProfile, log)
	if err != nil {
		closeLog()
		return nil, err
	}
	stopDebug, err := startDebug(*c.debugAddr, log)
	if err != nil {
		stopProfiles()
		closeLog()
		return nil, err
	}
	stopObs, err := startObservability(cfg, *c.auditLog, log) // telemetry.go
	if err != nil {
		stopDebug()
		stopProfiles()
		closeLog()
		return nil, err
	}
	closeAll := func() { stopObs(); stopDebug(); stopProfiles(); closeLog() }
	return &runEnv{cfg: cfg, log: log, modelArg: *c.model, close: closeAll, creds: defaultCredentials()}, nil
}

// startProfiles starts the CPU profile into cpu (if set) and returns the
// function that stops it and writes the heap profile to mem (if set), for
// `make bench`'s profiles and an operator's. Files are created at once, so a
// bad path is a startup error; failures at exit are logged.
func startProfiles(cpu, mem string, log *slog.Logger) (stop func(), err error) {
	var cpuFile, memFile *os.File
	if cpu != "" {
		if cpuFile, err = os.Create(cpu); err != nil {
			return nil, fmt.Errorf("--cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(cpuFile); err != nil {
			_ = cpuFile.Close()
			return nil, fmt.Errorf("--cpuprofile: %w", err)
		}
	}
	if mem != "" {
		if memFile, err = os.Create(mem); err != nil {
			if cpuFile != nil {
				pprof.StopCPUProfile()
				_ = cpuFile.Close()
			}
			return nil, fmt.Errorf("--memprofile: %w", err)
		}
	}
	return func() {
		if cpuFile != nil {
			pprof.StopCPUProfile()
			if err := cpuFile.Close(); err != nil {
				log.Warn("cannot write the CPU profile", "path", cpu, "err", err)
			}
		}
		if memFile != nil {
			runtime.GC() // the heap as of now, not of the last collection
			err := pprof.WriteHeapProfile(memFile)
			if cerr := memFile.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				log.Warn("cannot write the heap profile", "path", mem, "err", err)
			}
		}
	}, nil
}

// start is how the agent and mcp-server begin: setup, then the process
// becomes a child subreaper (process.Setup) so that nothing a server starts
// outlives its session, and ctx ends on SIGINT or SIGTERM. env.close also
// stops the signal handling.
func (c *commonFlags) start(stderr io.Writer) (env *runEnv, ctx context.Context, err error) {
	env, err = c.setup(stderr)
	if err != nil {
		return nil, nil, err
	}
	if err := process.Setup(); err != nil {
		env.log.Warn("cannot become a child subreaper: processes that leave a server's process group may outlive their session", "err", err)
	}
	logContainment(env.log)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	closeLog := env.close
	env.close = func() { stop(); closeLog() }
	return env, ctx, nil
}

// logContainment logs, once at startup, what process.Setup found keeps a
// session's processes in on this host (a cgroup and a cgroup namespace per
// child, or what is left without them).
func logContainment(log *slog.Logger) {
	c := process.Contained()
	log.Info("process containment", "cgroup", c.Cgroup, "cgroupNamespace", c.Namespace, "nsdelegate", c.NSDelegate, "holds", c.String())
}

// models builds the models from --model, the config and the environment.
func (e *runEnv) models() ([]gateway.Model, error) {
	primary := e.cfg.Model
	if e.modelArg != "" {
		mc, err := parseModelFlag(e.modelArg)
		if err != nil {
			return nil, err
		}
		if primary != nil && primary.Provider == mc.Provider { // keep the config's baseURL, key env, limits
			mc.BaseURL, mc.APIKeyEnv, mc.MaxTokens, mc.ThinkingBudget = primary.BaseURL, primary.APIKeyEnv, primary.MaxTokens, primary.ThinkingBudget
		}
		primary = &mc
	}
	ms, err := models(primary, os.Getenv, e.creds, e.log)
	if err != nil {
		return nil, err
	}
	e.primary = primary
	if n := missingKey(primary, os.Getenv, e.creds); n != "" {
		e.log.Warn(n)
	}
	if len(ms) > 0 {
		e.log.Info("default model", "model", ms[0].ID)
	} else {
		e.log.Info("no model configured: direct mode (slash commands)")
	}
	return ms, nil
}

// openStore opens the session store and the sign-in token store: --store,
// else config store.url, else store.path, else the default path; "memory"
// keeps both in memory. A postgres:// or postgresql:// URL opens the
// PostgreSQL store (openStoreURL), with sign-in tokens in memory (logged).
// Otherwise the tokens live next to the session database, in
// oauth-tokens.json (mode 0600), never in it. A store that cannot be opened
// is a startup error naming the path or URL, the cause and, where the
// store's error leaves it to us, what to do (openFailure); a damaged one
// also says to start with --store memory.
func openStore(flagStore string, cfg StoreConfig, log *slog.Logger) (store.Store, signin.Store, error) {
	path := storeSetting(flagStore, cfg)
	if path == "memory" {
		return memory.New(), signin.NewMemory(), nil
	}
	if postgres.IsURL(path) {
		st, err := openStoreURL(context.Background(), path, log)
		if err != nil {
			return nil, nil, err
		}
		log.Warn(pgTokensNote)
		return st, signin.NewMemory(), nil
	}
	if path == "" {
		var err error
		if path, err = sqlite.DefaultPath(); err != nil {
			return nil, nil, err
		}
	}
	tokens, err := signin.OpenFile(filepath.Join(filepath.Dir(path), tokensFile))
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeOpenTimeout)
	defer cancel()
	st, err := sqlite.Open(ctx, path)
	switch {
	case errors.Is(err, store.ErrDamaged):
		return nil, nil, storeErr(openFailure(err, false))
	case err != nil:
		return nil, nil, openFailure(err, false)
	}
	return st, tokens, nil
}

// tokensFile is the name of the sign-in token file, in the directory of the
// session store.
const tokensFile = "oauth-tokens.json"

// newSlog is the slog front of core. Log lines never carry stack traces:
// zapslog adds one to every Error line by default, and Error lines include
// acp-go-sdk's reports of malformed client input (a person typing at the
// agent, or a buggy client), where Go stack frames explain nothing. A
// logger's attributes are kept by lazyWith, not encoded by zap up front.
func newSlog(core zapcore.Core) *slog.Logger {
	return slog.New(newLazyWith(zapslog.NewHandler(core, zapslog.WithCaller(false), zapslog.AddStacktraceAt(noStacktraces))))
}

// noStacktraces is a level no record reaches.
const noStacktraces = slog.Level(math.MaxInt32)

// stderrLogBuffer is how many bytes of log lines wait for stderr before
// lines are dropped (see logSink).
const stderrLogBuffer = 1 << 20

// logSinkCloseTimeout bounds how long exiting waits for stderr to take the
// last log lines.
const logSinkCloseTimeout = 2 * time.Second

// newLogger builds the zap logger: human-readable lines on stderr, or JSON
// lines appended to the log file. Logging to stderr never blocks: if nobody
// reads it, lines are dropped and counted (logSink).
func newLogger(verbose bool, path string, stderr io.Writer) (*zap.Logger, func(), error) {
	level := zapcore.InfoLevel
	if verbose {
		level = zapcore.DebugLevel
	}
	encCfg := zap.NewProductionEncoderConfig()
	encCfg.EncodeTime = zapcore.ISO8601TimeEncoder
	var enc zapcore.Encoder
	var sink zapcore.WriteSyncer
	closeFn := func() {}
	if path != "" {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, nil, fmt.Errorf("--log-file: %w", err)
		}
		enc, sink = zapcore.NewJSONEncoder(encCfg), zapcore.Lock(f)
		closeFn = func() { _ = f.Close() }
	} else {
		encCfg.EncodeLevel = zapcore.CapitalLevelEncoder
		ls := newLogSink(stderr, stderrLogBuffer)
		enc, sink = zapcore.NewConsoleEncoder(encCfg), ls
		closeFn = func() { ls.Close(logSinkCloseTimeout) }
	}
	logger := zap.New(zapcore.NewCore(enc, sink, level), zap.ErrorOutput(sink))
	return logger, func() { _ = logger.Sync(); closeFn() }, nil
}

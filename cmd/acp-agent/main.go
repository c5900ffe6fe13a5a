// Command acp-agent is an ACP (Agent Client Protocol) agent that bridges the
// MCP servers an editor passes at session/new into the agent's tool set, for
// that session only.
//
// Usage:
//
//	acp-agent [--config FILE] [--model provider:name] [--store FILE|memory] [--verbose] [--log-file FILE] [--version]
//
// With no subcommand it speaks ACP on stdin/stdout. stdout carries ACP frames
// only; logs go to stderr, or to --log-file.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/exp/zapslog"
	"go.uber.org/zap/zapcore"

	"github.com/seed02d3eb6b/acp-agent/acp"
	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/session"
)

// version is set with -ldflags "-X main.version=..."; otherwise the module
// version from the build info is used.
var version = ""

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "acp-agent:", err)
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
	fs := flag.NewFlagSet("acp-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "config file (default $XDG_CONFIG_HOME/acp-agent/config.json)")
	verbose := fs.Bool("verbose", false, "log at debug level, including MCP servers' stderr")
	logFile := fs.String("log-file", "", "write logs to this file instead of stderr")
	showVersion := fs.Bool("version", false, "print the version and exit")
	storeFlag := fs.String("store", "", `the session store: a SQLite file, or "memory" (default $XDG_STATE_HOME/acp-agent/sessions.db)`)
	modelFlag := fs.String("model", "", "the default model: provider:name (anthropic:claude-sonnet-4-5, openai:gpt-4.1), or direct")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unknown subcommand %q (run with no arguments to serve ACP on stdio)", fs.Arg(0))
	}
	if *showVersion {
		// --version is the one thing printed on stdout outside ACP.
		fmt.Fprintln(stdout, "acp-agent", agentVersion())
		return nil
	}

	required := *configPath != ""
	if !required {
		*configPath = defaultConfigPath()
	}
	cfg, err := loadConfig(*configPath, required)
	if err != nil {
		return err
	}

	logger, closeLog, err := newLogger(*verbose, *logFile, stderr)
	if err != nil {
		return err
	}
	defer closeLog()
	log := slog.New(zapslog.NewHandler(logger.Core(), zapslog.WithCaller(false)))
	log.Info("starting", "version", agentVersion(), "pid", os.Getpid())

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	opts, err := cfg.agentOptions()
	if err != nil {
		return err
	}
	primary := cfg.Model
	if *modelFlag != "" {
		mc, err := parseModelFlag(*modelFlag)
		if err != nil {
			return err
		}
		if primary != nil && primary.Provider == mc.Provider { // keep the config's baseURL, key env, limits
			mc.BaseURL, mc.APIKeyEnv, mc.MaxTokens, mc.ThinkingBudget = primary.BaseURL, primary.APIKeyEnv, primary.MaxTokens, primary.ThinkingBudget
		}
		primary = &mc
	}
	ms, err := models(primary, os.Getenv, log)
	if err != nil {
		return err
	}
	store, err := openStore(*storeFlag, cfg.Store.Path)
	if err != nil {
		return err
	}
	defer store.Close()
	opts.Store = store
	opts.History = session.NewHistory(store, log)
	opts.Gateway = gateway.NewLocal(&gateway.RunnerOptions{Models: ms, Permissions: cfg.Permissions.gateway(), History: opts.History, Logger: log})
	if len(ms) > 0 {
		log.Info("default model", "model", ms[0].ID)
	} else {
		log.Info("no model configured: direct mode (slash commands)")
	}
	opts.Name, opts.Version, opts.Logger = "acp-agent", agentVersion(), log
	agent := acp.New(opts)
	err = agent.Serve(ctx, stdin, stdout)
	log.Info("stopped")
	return err
}

// openStore opens the session store: --store, else config store.path, else
// the default path; "memory" keeps sessions in memory. A store that cannot
// be opened is a startup error naming the path and the cause.
func openStore(flagPath, cfgPath string) (session.Store, error) {
	path := flagPath
	if path == "" {
		path = cfgPath
	}
	if path == "memory" {
		return session.NewMemory(), nil
	}
	if path == "" {
		var err error
		if path, err = session.DefaultPath(); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return session.OpenSQLite(ctx, path)
}

// newLogger builds the zap logger: human-readable lines on stderr, or JSON
// lines appended to the log file.
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
		enc, sink = zapcore.NewConsoleEncoder(encCfg), zapcore.AddSync(stderr)
	}
	logger := zap.New(zapcore.NewCore(enc, sink, level))
	return logger, func() { _ = logger.Sync(); closeFn() }, nil
}

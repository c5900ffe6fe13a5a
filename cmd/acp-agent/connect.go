package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/seed02d3eb6b/acp-agent/acp"
	"github.com/seed02d3eb6b/acp-agent/acp/connect"
	"github.com/seed02d3eb6b/acp-agent/acp/remote"
	"github.com/seed02d3eb6b/acp-agent/sandbox/environ"
	"github.com/seed02d3eb6b/acp-agent/sandbox/process"
	"github.com/seed02d3eb6b/acp-agent/sandbox/urlpolicy"
)

const connectUsage = `Usage: acp-agent connect [flags] URL

Connect an editor that starts its agents over stdio (Zed's agent_servers,
acpx) to an acp-agent gateway on the network. The editor starts this
command; it speaks ACP on stdin/stdout and carries every message to the
gateway's /acp endpoint at URL: https:// or wss:// (http:// and ws:// only
on loopback), with the token of --token-file or ` + tokenEnv + `.

The stdio MCP servers the editor passes at session/new run here, on this
machine, in the session's directory and under this machine's sandbox rules
(config "sandbox": allowEnv); the gateway reaches them through this
connection (MCP-over-ACP). http and sse servers are the gateway's to reach.

When the connection drops, connect dials again with backoff (at most 30 s
between tries, for 5 minutes), initializes again and re-attaches every open
session; a request under way at the drop is answered with an error saying
so, and each session is told. It ends when the editor closes stdin, or on
SIGINT/SIGTERM, with every local server stopped; if it gives up it exits
with status 1.

Zed (settings.json):
  "agent_servers": {"acp-agent": {"command": "acp-agent",
    "args": ["connect", "--token-file", "/home/me/.config/acp-agent/gateway-token", "wss://gateway.example/acp"]}}

Flags:
`

// gatewayDialer returns how connect dials the gateway at gatewayURL with
// token: acp/remote's client (a WebSocket, else Streamable HTTP), whose
// connection is a connect.Link. A refusal that retrying cannot fix (401,
// 403: the token; 404: no ACP endpoint at that URL) ends the proxy at
// once (connect.Permanent).
func gatewayDialer(gatewayURL, token string, log *slog.Logger) (connect.DialFunc, error) {
	return func(ctx context.Context) (connect.Link, error) {
		c, err := remote.Dial(ctx, gatewayURL, &remote.DialOptions{Token: token, Logger: log})
		var se *remote.StatusError
		if errors.As(err, &se) && (se.Status == http.StatusUnauthorized || se.Status == http.StatusForbidden || se.Status == http.StatusNotFound) {
			return nil, connect.Permanent(err)
		}
		if err != nil {
			return nil, err
		}
		return c, nil
	}, nil
}

// runConnect is "acp-agent connect": the ACP proxy between the editor on
// stdin/stdout and the gateway at the URL, dialed by gatewayDialer.
func runConnect(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return connectWith(args, stdin, stdout, stderr, gatewayDialer)
}

// connectWith is runConnect with the dialer's constructor (tests give an
// in-process gateway).
func connectWith(args []string, stdin io.Reader, stdout, stderr io.Writer, dialer func(gatewayURL, token string, log *slog.Logger) (connect.DialFunc, error)) error {
	fs := flag.NewFlagSet("acp-agent connect", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned (main prints them once), help goes to stdout
	config := fs.String("config", "", "config file, for the sandbox settings the local stdio servers run under (default $XDG_CONFIG_HOME/acp-agent/config.json)")
	tokenFile := fs.String("token-file", "", "`FILE` holding the gateway's token (default: "+tokenEnv+")")
	verbose := fs.Bool("verbose", false, "log at debug level, including the local MCP servers' stderr")
	fs.BoolVar(verbose, "v", false, "same as --verbose")
	logFile := fs.String("log-file", "", "write logs to this file instead of stderr")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, connectUsage)
			printFlags(stdout, fs)
			printHelpFooter(stdout, "From an editor on another machine: acp-agent connect")
			return nil
		}
		return fmt.Errorf("connect: %w", flagError(fs, err, "acp-agent connect"))
	}
	switch {
	case fs.NArg() == 0:
		return errors.New("connect: the gateway's URL is missing: acp-agent connect [flags] URL, such as wss://gateway.example/acp (see acp-agent connect --help)")
	case fs.NArg() > 1:
		return fmt.Errorf("connect: unexpected argument %q after the URL: flags go before it (see acp-agent connect --help)", fs.Arg(1))
	}
	gatewayURL := fs.Arg(0)
	if err := checkGatewayURL(gatewayURL); err != nil {
		return err
	}
	token, err := readToken("--token-file", *tokenFile, tokenEnv)
	if err != nil {
		return err
	}
	if isTerminal(stdin) {
		return errors.New("connect: stdin is a terminal: acp-agent connect speaks ACP (JSON-RPC) on stdin/stdout and is started by an editor (see acp-agent connect --help)")
	}
	path, required := *config, *config != ""
	if !required {
		path = defaultConfigPath()
	}
	cfg, err := loadConfig(path, required)
	if err != nil {
		return err
	}
	logger, closeLog, err := newLogger(*verbose, *logFile, stderr)
	if err != nil {
		return err
	}
	defer closeLog()
	log := newSlog(logger.Core())
	log.Info("starting", "version", agentVersion(), "pid", os.Getpid(), "subcommand", "connect")
	dial, err := dialer(gatewayURL, token, log)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	if err := process.Setup(); err != nil {
		log.Warn("cannot become a child subreaper: processes that leave a local server's process group may outlive their session", "err", err)
	}
	logContainment(log)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop) // a second signal ends the process at once
	p := connect.New(dial, &connect.Options{
		URL:    gatewayURL,
		Env:    &environ.Policy{Allow: cfg.Sandbox.AllowEnv},
		Grace:  time.Duration(cfg.Timeouts.Grace),
		Logger: log,
	})
	if err := p.Run(ctx, acp.NewLineStream(stdin, stdout)); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	return nil
}

// checkGatewayURL refuses a gateway URL connect cannot use: not http(s) or
// ws(s), no host, credentials in it, or unencrypted (http, ws) to a host
// that is not loopback, which would send the token and every message in
// the clear.
func checkGatewayURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("connect: URL %q: want the gateway's /acp endpoint as https://HOST/acp or wss://HOST/acp", urlpolicy.RedactURL(raw))
	}
	if u.User != nil {
		return fmt.Errorf("connect: URL %q carries credentials: give the token with --token-file or %s", urlpolicy.RedactURL(raw), tokenEnv)
	}
	switch u.Scheme {
	case "https", "wss":
		return nil
	case "http", "ws":
		ip := net.ParseIP(u.Hostname())
		if u.Hostname() == "localhost" || (ip != nil && ip.IsLoopback()) {
			return nil
		}
		return fmt.Errorf("connect: URL %q: %s:// would send the token and every message unencrypted; use %ss:// (plain %s:// only on loopback)", urlpolicy.RedactURL(raw), u.Scheme, u.Scheme, u.Scheme)
	}
	return fmt.Errorf("connect: URL %q: the scheme must be https, wss, or on loopback http or ws", urlpolicy.RedactURL(raw))
}

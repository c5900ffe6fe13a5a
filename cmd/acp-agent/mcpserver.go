package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
	"github.com/seed02d3eb6b/acp-agent/internal/jsonrpcid"
	"github.com/seed02d3eb6b/acp-agent/internal/metrics"
	"github.com/seed02d3eb6b/acp-agent/mcpserver"
	"github.com/seed02d3eb6b/acp-agent/session"
)

// mcpTokenEnv holds the token of "mcp-server --listen" when no --token-file
// is given. It is not the gateway's variable: the MCP endpoint and the
// gateway are different trust relations, and a shell that exports the
// gateway token for `acp-agent connect` must not silently open (or lock)
// an MCP endpoint with it.
const mcpTokenEnv = "ACP_AGENT_MCP_TOKEN"

// mcpPath is the path of the Streamable HTTP endpoint under --listen.
const mcpPath = "/mcp"

// mcpHTTPStopTimeout bounds how long stopping the HTTP server waits for
// requests in flight once every conversation has ended.
const mcpHTTPStopTimeout = 5 * time.Second

const mcpServerUsage = `Usage: acp-agent mcp-server [flags]

Serve MCP with one tool, ask_agent, so that another agent (Claude Code,
Claude Desktop, Cursor, any MCP client) can hand work to acp-agent. It runs
the same agent as the ACP mode: config file, default MCP servers, model,
permissions policy, built-in tools and session store. Conversations run in
the working directory of this process. A call without a sessionKey starts
a conversation under a fresh key; a call with one (returned by an earlier
call, or the client's own: 1 to 128 visible ASCII characters) continues
that conversation, also across restarts, or starts it on the key's first
use. A key continues only a conversation an mcp-server started, in the
directory it was started in: an editor's ACP session, or a conversation of
another directory, is refused (an error result naming both directories).
Over --listen, each client's keys are its own: a client is who holds
a token (--tokens-file names one client per token; --token-file's one
token is one client), and without a token every request is one client.

By default it speaks MCP on stdin/stdout (stdout carries MCP frames only;
logs go to stderr or --log-file). With --listen it serves Streamable HTTP at
http://HOST:PORT/mcp instead: the host must be named; a non-loopback address
needs a token (--token-file, or ` + mcpTokenEnv + `, or --tokens-file), which
every request then sends as "Authorization: Bearer <token>"; requests from browsers (with
an Origin header) are refused unless the origin is in --allowed-origins; a
loopback listener refuses a Host header that is not loopback (DNS
rebinding). Requests of protocol 2026-07-28 and later are served
statelessly, older clients on sessions (Mcp-Session-Id). The listener also
serves /healthz, /readyz (the session store answers) and Prometheus
/metrics. With tokens, /metrics and the reason /readyz fails are the
operator's: the bearer of --metrics-token-file's token (or
` + metricsTokenEnv + `'s), or of --token-file's when there is no
--tokens-file; with --tokens-file no client's token reads them.

Claude Desktop / Claude Code:
  {"mcpServers": {"acp-agent": {"command": "acp-agent", "args": ["mcp-server"]}}}

Flags:
`

// mcpServerFlags are the flags of "acp-agent mcp-server".
type mcpServerFlags struct {
	common             *commonFlags
	store, listen      *string
	tokenFile, origins *string
	tokensFile         *string
	metricsTokenFile   *string
	showVersion        *bool
	allowedOrigins     []string // --allowed-origins, checked
	// clients maps each token a request may send to its client's identity
	// (mcpClientID): from --token-file (or the environment) and
	// --tokens-file. Empty: no token is asked for.
	clients map[string]string
	// operator is the token that reads /metrics and why /readyz fails
	// (--metrics-token-file); "" none.
	operator string
}

// parseMCPServerFlags parses and checks the flags; help is true for
// -h/--help. The listen rules are checked here, before anything starts.
func parseMCPServerFlags(args []string, stdout io.Writer) (f *mcpServerFlags, help bool, err error) {
	fs := flag.NewFlagSet("acp-agent mcp-server", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned as one line, help goes to stdout
	f = &mcpServerFlags{common: addCommonFlags(fs)}
	fs.BoolVar(f.common.verbose, "v", false, "same as --verbose")
	f.store = fs.String("store", "", `the session store: a SQLite file, "memory", or a postgres:// URL (password from PGPASSWORD or ~/.pgpass) (default $XDG_STATE_HOME/acp-agent/sessions.db)`)
	f.listen = fs.String("listen", "", "serve Streamable HTTP at http://`HOST:PORT`"+mcpPath+" instead of stdio; the host must be named")
	f.tokenFile = fs.String("token-file", "", "with --listen: `FILE` holding the bearer token every request must send (default: "+mcpTokenEnv+"); required off loopback")
	f.tokensFile = fs.String("tokens-file", "", "with --listen: `FILE` of \"CLIENT TOKEN\" lines (chmod 600): each token names a client, whose sessionKeys are its own")
	f.origins = fs.String("allowed-origins", "", "with --listen: comma-separated Origin values (`LIST`) accepted from browsers (none by default)")
	f.metricsTokenFile = fs.String("metrics-token-file", "", "with --listen: `FILE` holding the operator's token, the one that reads /metrics and why /readyz fails (default: "+metricsTokenEnv+"); with --tokens-file no client's token does")
	f.showVersion = fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, mcpServerUsage)
			printFlags(stdout, fs)
			printHelpFooter(stdout, "From another agent: acp-agent as an MCP server")
			return nil, true, nil
		}
		return nil, false, fmt.Errorf("mcp-server: %w", flagError(fs, err, "acp-agent mcp-server"))
	}
	if fs.NArg() > 0 {
		return nil, false, fmt.Errorf("mcp-server: unexpected argument %q: it takes flags only (see acp-agent mcp-server --help)", fs.Arg(0))
	}
	set := map[string]bool{} // the flags given
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if *f.showVersion {
		return f, false, nil
	}
	for _, o := range strings.Split(*f.origins, ",") {
		if o = strings.TrimSpace(o); o != "" {
			if err := checkOrigin(o); err != nil {
				return nil, false, err
			}
			f.allowedOrigins = append(f.allowedOrigins, o)
		}
	}
	if *f.listen == "" {
		for _, name := range []string{"token-file", "tokens-file", "allowed-origins", "metrics-token-file"} {
			if set[name] {
				return nil, false, fmt.Errorf("--%s applies only with --listen (stdio needs no token and has no browsers)", name)
			}
		}
		return f, false, nil
	}
	token, err := listenerToken("--token-file", *f.tokenFile, mcpTokenEnv)
	if err != nil {
		return nil, false, err
	}
	f.clients = map[string]string{}
	if token != "" {
		f.clients[token] = mcpClientID(token)
	}
	if *f.tokensFile != "" {
		names, err := readTokensFile(*f.tokensFile, "client")
		if err != nil {
			return nil, false, err
		}
		for tok, name := range names {
			if tok == token {
				return nil, false, fmt.Errorf("--tokens-file %s gives the token of --token-file (or %s) to client %s: each token names one client", *f.tokensFile, mcpTokenEnv, name)
			}
			f.clients[tok] = "client:" + name
		}
	}
	authToken := token
	if authToken == "" && len(f.clients) > 0 {
		authToken = "tokens-file"
	}
	if err := checkListen(*f.listen, authToken, mcpTokenEnv); err != nil {
		return nil, false, err
	}
	if f.operator, err = operatorToken(*f.metricsTokenFile, f.clients); err != nil {
		return nil, false, err
	}
	return f, false, nil
}

// checkOrigin refuses an --allowed-origins entry that no browser would
// send, which would never match: an origin is scheme://host[:port], with no
// path and no trailing slash (RFC 6454).
func checkOrigin(o string) error {
	u, err := url.Parse(o)
	if err != nil || u.Scheme == "" || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil || strings.HasSuffix(o, "/") {
		return fmt.Errorf("--allowed-origins: %q is not an origin: write scheme://host[:port] as browsers send it, such as https://ide.example", o)
	}
	return nil
}

// runMCPServer is "acp-agent mcp-server": the agent as an MCP server with
// one tool, ask_agent (package mcpserver), on stdin/stdout or, with
// --listen, over Streamable HTTP. It serves until stdin closes (stdio) or
// SIGINT/SIGTERM, then ends every conversation (every MCP server child is
// gone) and returns nil.
func runMCPServer(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	f, help, err := parseMCPServerFlags(args, stdout)
	if err != nil || help {
		return err
	}
	if *f.showVersion {
		fmt.Fprintln(stdout, "acp-agent", agentVersion())
		return nil
	}
	env, ctx, err := f.common.start(stderr)
	if err != nil {
		return err
	}
	defer env.close()
	log, cfg := env.log, env.cfg

	opts, err := cfg.coreOptions()
	if err != nil {
		return err
	}
	store, tokens, err := openStore(*f.store, cfg.Store, log)
	if err != nil {
		return err
	}
	defer store.Close()
	opts.Bridge.OAuth.Store = tokens
	ms, err := env.models()
	if err != nil {
		return err
	}
	opts.Store = store
	opts.History = session.NewHistory(store, log)
	defer opts.History.Close() // before the store closes: the commits under way
	ropts := cfg.runnerOptions(ms, opts.History, log)
	var met *metrics.Metrics
	if *f.listen != "" { // served beside MCP on the listener
		met = metrics.New(&metrics.Options{Tenants: *f.tokensFile != ""})
		ropts.Observer, opts.Observer = met, met
		opts.History.ObserveCommits(met.StoreCommit)
	}
	opts.Gateway = runner.NewLocal(ropts)
	opts.Name, opts.Version, opts.Logger = "acp-agent", agentVersion(), log
	core := session.NewCore(&opts)
	if met != nil {
		met.ServerStates(core.ServerStates)
		cfg.observe(met)
	}
	cwd, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("mcp-server: the working directory, where conversations run: %w", err)
	}
	srv, shutdown := mcpserver.New(core, &mcpserver.Options{Name: "acp-agent", Version: agentVersion(), Cwd: cwd, Logger: log})
	end := func() {
		log.Info("ending every conversation")
		shutdown()
		core.Shutdown()
		log.Info("stopped")
	}
	if *f.listen == "" {
		err = serveMCPStdio(ctx, srv, stdin, stdout, log)
		end()
		return err
	}
	ops := &opsEndpoints{met: met, ready: storeReady(store)}
	return serveMCPHTTP(ctx, srv, f, ops, log, end)
}

// opsEndpoints are what an HTTP listener serves to operators beside its
// protocol: /healthz, /readyz (ready) and /metrics (met).
type opsEndpoints struct {
	met   *metrics.Metrics
	ready func(context.Context) error
}

// serveMCPStdio serves srv on in/out (stdin/stdout: the go-sdk's
// StdioTransport is this IOTransport over os.Stdin and os.Stdout) until the
// client closes in or ctx is done; either is a normal end. When in ends,
// the requests read before its end are answered first (a tools/call under
// way cancelled), as mcpserver.NewStdioTransport says.
func serveMCPStdio(ctx context.Context, srv *mcp.Server, in io.Reader, out io.Writer, log *slog.Logger) error {
	log.Info("serving MCP on stdio")
	err := srv.Run(ctx, mcpserver.NewStdioTransport(in, out, 0, log))
	switch {
	case ctx.Err() != nil:
		log.Info("stopping", "cause", context.Cause(ctx))
		return nil
	case err == nil || errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed):
		log.Info("client disconnected")
		return nil
	default:
		return fmt.Errorf("mcp-server: stdio: %w", err)
	}
}

// printFlags lists the flags of fs as they are written: "--name", "-v",
// each with its default when it has one other than the zero value.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		dash := "--"
		if len(f.Name) == 1 {
			dash = "-"
		}
		typ, usage := flag.UnquoteUsage(f)
		if typ != "" {
			typ = " " + typ
		}
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(w, "  %s%s%s\n    \t%s\n", dash, f.Name, typ, usage)
	})
}

// serveMCPHTTP serves srv over Streamable HTTP at f.listen, with ops's
// /healthz, /readyz and /metrics (when ops is not nil; /metrics takes a
// client's token when there are tokens), until ctx is done, then runs end (which ends every conversation) and stops the HTTP
// server.
func serveMCPHTTP(ctx context.Context, srv *mcp.Server, f *mcpServerFlags, ops *opsEndpoints, log *slog.Logger, end func()) error {
	ln, err := net.Listen("tcp", *f.listen)
	if err != nil {
		end()
		return fmt.Errorf("--listen: %w", err)
	}
	// Requests run under reqCtx, cancelled at shutdown, so that open SSE
	// streams end and Shutdown does not wait on them.
	reqCtx, cancelReqs := context.WithCancel(context.Background())
	defer cancelReqs()
	mux := http.NewServeMux()
	mux.Handle(mcpPath, mcpHTTPHandler(srv, f.clients, f.allowedOrigins, log))
	if ops != nil && ops.met != nil {
		ops.met.Mount(mux, &metrics.HandlerOptions{Ready: ops.ready, Authorized: operatorAuth(f.operator, f.clients, *f.tokensFile != ""), Logger: log})
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return reqCtx },
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	log.Info("mcp-server listening", "url", "http://"+ln.Addr().String()+mcpPath, "auth", len(f.clients) > 0, "clients", len(f.clients), "allowedOrigins", f.allowedOrigins)
	select {
	case err = <-errc:
		err = fmt.Errorf("--listen %s: %w", *f.listen, err)
	case <-ctx.Done():
		log.Info("stopping", "cause", context.Cause(ctx))
	}
	end()
	cancelReqs()
	sctx, cancel := context.WithTimeout(context.Background(), mcpHTTPStopTimeout)
	defer cancel()
	if hs.Shutdown(sctx) != nil {
		_ = hs.Close()
	}
	if err == nil {
		<-errc // Serve returns ErrServerClosed once Shutdown has begun
	}
	return err
}

// mcpHTTPHandler is the Streamable HTTP endpoint of srv under the listen
// rules: a request with an Origin header (a browser) is refused with 403
// unless that origin is in allowed; with clients (each token a request may
// send, mapped to its client's identity; empty: no token), a request
// without "Authorization: Bearer <token>" of one of them gets 401; the
// go-sdk's DNS-rebinding
// protection (a loopback listener refuses a non-loopback Host, 403) stays on.
// Requests of protocol 2026-07-28 and later are served statelessly, older
// ones on sessions (see mcpVersionRouter). A request that passes the token
// check carries its client's identity in its auth.TokenInfo: mcpserver
// keeps each client's sessionKeys apart by it.
func mcpHTTPHandler(srv *mcp.Server, clients map[string]string, allowed []string, log *slog.Logger) http.Handler {
	h := mcpVersionRouter(srv, log.With("component", "mcp-http"))
	if len(clients) > 0 {
		// By the tokens' digests: a lookup takes no longer for a token
		// that shares a prefix with one of them.
		byDigest := make(map[[sha256.Size]byte]string, len(clients))
		for tok, id := range clients {
			byDigest[sha256.Sum256([]byte(tok))] = id
		}
		verify := func(_ context.Context, got string, _ *http.Request) (*auth.TokenInfo, error) {
			client, ok := byDigest[sha256.Sum256([]byte(got))]
			if !ok {
				return nil, fmt.Errorf("%w: the bearer token is not this server's", auth.ErrInvalidToken)
			}
			return &auth.TokenInfo{UserID: client}, nil
		}
		h = auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
	}
	inner := h
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" && !slices.Contains(allowed, o) && !ownLoopbackOrigin(o, r.Host) {
			log.Warn("refused a request from a browser origin not in --allowed-origins", "origin", o, "remote", r.RemoteAddr)
			http.Error(w, fmt.Sprintf("origin %q is not allowed (--allowed-origins)", o), http.StatusForbidden)
			return
		}
		inner.ServeHTTP(w, r)
	})
}

// mcpStatelessVersion is the first MCP protocol version served statelessly
// over HTTP (SEP-2575: no initialize, no sessions; each request carries its
// version, capabilities and client in _meta).
const mcpStatelessVersion = "2026-07-28"

// mcpVersionRouter serves srv over Streamable HTTP for every protocol
// version, with two go-sdk handlers: a request whose MCP-Protocol-Version
// header is 2026-07-28 or later (as go-sdk compares versions: by string;
// an unknown later version gets its UnsupportedProtocolVersion error there)
// goes to a stateless one, which go-sdk requires for those versions
// (conversations live in the store, keyed by sessionKey, and a permission
// question is an input-required result the client answers by retrying the
// call); a request that closes its HTTP request cancels its call. Any other
// request (initialize, and every request of a session: they send an older
// version, or none) goes to a stateful one with sessions (Mcp-Session-Id)
// and an event store, so that a client whose SSE stream broke mid-call
// resumes it with Last-Event-ID (10 MiB of events are kept, oldest dropped
// first).
func mcpVersionRouter(srv *mcp.Server, log *slog.Logger) http.Handler {
	get := func(*http.Request) *mcp.Server { return srv }
	stateful := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Logger: log, EventStore: mcp.NewMemoryEventStore(nil)})
	stateless := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Logger: log, Stateless: true, PropagateRequestCancellation: true})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && !exactIDs(w, r) {
			return
		}
		if r.Header.Get("Mcp-Protocol-Version") >= mcpStatelessVersion {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})
}

// exactIDs reads r's body (at most mcp.DefaultMaxLineLength bytes) and
// puts it back, and answers 400 with a JSON-RPC -32600 error on id null
// when a message of it (or of a batch) has an id the go-sdk would not give
// back unchanged (jsonrpcid.Exact: 1.5, 1e19 and 1e400 are refused): the
// SDK reads ids as doubles and would answer on another id. A body it
// cannot parse goes on to the SDK, which answers it. It reports whether
// the request goes on.
func exactIDs(w http.ResponseWriter, r *http.Request) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, mcp.DefaultMaxLineLength))
	if err != nil {
		http.Error(w, fmt.Sprintf("reading the request body: %v", err), http.StatusRequestEntityTooLarge)
		return false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var msgs []struct {
		ID json.RawMessage `json:"id"`
	}
	if t := bytes.TrimSpace(body); len(t) > 0 && t[0] == '[' {
		if json.Unmarshal(t, &msgs) != nil {
			return true
		}
	} else {
		msgs = append(msgs, struct {
			ID json.RawMessage `json:"id"`
		}{})
		if json.Unmarshal(t, &msgs[0]) != nil {
			return true
		}
	}
	for _, m := range msgs {
		if m.ID != nil && !bytes.Equal(m.ID, []byte("null")) && jsonrpcid.Exact(m.ID) == nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			msg := fmt.Sprintf("invalid request: the id %.40s is not a string or an integer a double holds exactly (JSON-RPC 2.0: an id is a string or an integer)", m.ID)
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": -32600, "message": msg}})
			_, _ = w.Write(b)
			return false
		}
	}
	return true
}

// mcpClientID is the identity of the clients holding token: a digest of it,
// never the token itself (it reaches logs and, hashed again with each
// sessionKey, the store's session IDs).
func mcpClientID(token string) string {
	sum := sha256.Sum256([]byte("acp-agent mcp-server client\x00" + token))
	return "token:" + hex.EncodeToString(sum[:12])
}

// ownLoopbackOrigin reports whether origin is the server's own loopback
// origin: http://localhost, 127.0.0.1 or [::1] with the request's Host
// (port included). Only this server answers there and it serves no pages, so
// such a request is no cross-site one; a rebound name (evil.example) is
// neither loopback nor, on a loopback listener, an accepted Host.
func ownLoopbackOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Scheme != "http" || u.Host != host {
		return false
	}
	ip := net.ParseIP(u.Hostname())
	return u.Hostname() == "localhost" || (ip != nil && ip.IsLoopback())
}

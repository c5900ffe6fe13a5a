package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/seed02d3eb6b/acp-agent/acp"
	"github.com/seed02d3eb6b/acp-agent/acp/remote"
	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
	"github.com/seed02d3eb6b/acp-agent/internal/metrics"
	"github.com/seed02d3eb6b/acp-agent/session"
	"github.com/seed02d3eb6b/acp-agent/session/store"
	"github.com/seed02d3eb6b/acp-agent/signin"
)

// tokenEnv holds the gateway token when no --token-file is given, for the
// gateway and for "acp-agent connect".
const tokenEnv = "ACP_AGENT_GATEWAY_TOKEN"

// acpPath is the path of the ACP endpoint under --listen.
const acpPath = "/acp"

// readToken reads a token from file (given by flag, such as --token-file),
// else from the environment variable envName; "" means none.
func readToken(flag, file, envName string) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("%s: %w", flag, err)
		}
		t := strings.TrimSpace(string(b))
		if t == "" {
			return "", fmt.Errorf("%s %s is empty", flag, file)
		}
		return t, nil
	}
	return os.Getenv(envName), nil
}

// minTokenChars and minTokenDistinct bound a listener's token: at least 32
// characters (32 random bytes in hex, as "openssl rand -hex 32" makes, give
// 64), and at least 8 different characters, so that a padded or repeated
// string is refused.
const minTokenChars, minTokenDistinct = 32, 8

// listenerToken reads the token a listener (the gateway, mcp-server
// --listen, --metrics-addr) requires of its clients, from file (given by
// flag, such as --token-file) or the environment variable envName, and
// refuses one that others can guess or read: a weak one (checkTokenStrength)
// or one in a file that group or others can read or write. "" means none.
// Errors name flag.
func listenerToken(flag, file, envName string) (string, error) {
	if file != "" {
		fi, err := os.Stat(file)
		if err != nil {
			return "", fmt.Errorf("%s: %w", flag, err)
		}
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			return "", fmt.Errorf("%s %s is readable or writable by group or others (mode %04o): it holds a secret; chmod 600 it", flag, file, perm)
		}
	}
	token, err := readToken(flag, file, envName)
	if token == "" || err != nil {
		return token, err
	}
	from := flag + " " + file
	if file == "" {
		from = envName
	}
	if err := checkTokenStrength(token); err != nil {
		return "", fmt.Errorf("%s: %w", from, err)
	}
	return token, nil
}

// checkTokenStrength refuses a token others could guess: shorter than
// minTokenChars or of fewer than minTokenDistinct different characters.
// The error says the rule and how to make a good token.
func checkTokenStrength(token string) error {
	distinct := map[rune]bool{}
	for _, r := range token {
		distinct[r] = true
	}
	if len(token) < minTokenChars || len(distinct) < minTokenDistinct {
		return fmt.Errorf("the token has %d characters (%d different): a listener's token needs at least %d, of at least %d different characters; make one with: openssl rand -hex 32",
			len(token), len(distinct), minTokenChars, minTokenDistinct)
	}
	return nil
}

// checkListen refuses an address without an explicit host (":7777" binds
// every interface) and, without a token, any address that is not loopback;
// envName is the variable that can hold the token, named in the error.
func checkListen(addr, token, envName string) error {
	return checkListenFlag("--listen", addr, token, envName)
}

// checkListenFlag is checkListen for the address of flag (--listen,
// --metrics-addr), named in the errors; the token flag is flag's
// "-token-file" one for --metrics-addr.
func checkListenFlag(flag, addr, token, envName string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s %q: %v", flag, addr, err)
	}
	if host == "" {
		return fmt.Errorf("%s %q has no host and would bind every interface; name one, such as 127.0.0.1%s", flag, addr, addr)
	}
	ip := net.ParseIP(host)
	loopback := host == "localhost" || (ip != nil && ip.IsLoopback())
	if !loopback && token == "" {
		tokenFlag := "--token-file"
		if flag == "--metrics-addr" {
			tokenFlag = "--metrics-token-file"
		}
		return fmt.Errorf("%s %q is not a loopback address: set a token (%s or %s) first", flag, addr, tokenFlag, envName)
	}
	return nil
}

const gatewayUsage = `Usage: acp-agent gateway [flags]

Serve ACP over the network at http://HOST:PORT/acp: the ACP remote
transport (Streamable HTTP and WebSocket on one endpoint; https:// with
--tls-cert and --tls-key; HTTP/2 where the client offers it, cleartext h2c
too). Sessions run here, with their models, tools and store. An editor whose
ACP client speaks the transport (the official TypeScript SDK's http-client
and ws-client) connects to the URL; an editor that starts agents over stdio
(Zed) runs "acp-agent connect URL", which also starts the editor's stdio MCP
servers on the editor's machine. The gateway starts a client's stdio server
itself only if its command is in config gateway.allowCommands.

The host must be named; a non-loopback address needs a token
(--token-file, or ` + tokenEnv + `), or tenants' tokens (--tokens-file):
each tenant sees only its own sessions. --store is a SQLite file (default),
"memory", or a fleet's postgres:// URL: replicas sharing one PostgreSQL
database serve any session, each turn on one replica at a time, and a
balancer keeps a connection on its replica by the acp_replica cookie. The
listener also serves /healthz, /readyz (the store answers) and Prometheus
/metrics. With tokens, /metrics and the reason /readyz fails are the
operator's: the bearer of --metrics-token-file's token (or
` + metricsTokenEnv + `'s), or of --token-file's when there is no
--tokens-file; a tenant's token reads neither, and with tenants the
metrics leave out MCP servers' and tools' names.

Flags:
`

// gatewayFlags are the flags of "acp-agent gateway".
type gatewayFlags struct {
	common                        *commonFlags
	listen, tokenFile, tokensFile *string
	origins, store, replica       *string
	tlsCert, tlsKey               *string
	metricsTokenFile              *string
}

// runGateway is "acp-agent gateway": ACP over the network (package
// acp/remote), every connection an acp.Agent over its tenant's session
// core, until SIGINT or SIGTERM; then every connection ends (its turns are
// answered cancelled, its sessions end) and it returns nil.
func runGateway(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("acp-agent gateway", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned (main prints them once), help goes to stdout
	f := gatewayFlags{common: addCommonFlags(fs)}
	f.listen = fs.String("listen", "127.0.0.1:7777", "address to listen on, with an explicit host")
	f.tokenFile = fs.String("token-file", "", "file holding the gateway's token, one tenant's (default: "+tokenEnv+")")
	f.origins = fs.String("allowed-origins", "", "comma-separated Origin values accepted from browsers (none by default)")
	f.tokensFile = fs.String("tokens-file", "", `file of "TENANT TOKEN" lines, one tenant's token a line (mode 600): each tenant sees only its own sessions`)
	f.store = fs.String("store", "", `the session store: a SQLite file, "memory", or the fleet's postgres:// URL (password from PGPASSWORD or ~/.pgpass) (default $XDG_STATE_HOME/acp-agent/sessions.db)`)
	f.replica = fs.String("replica-name", "", "this replica's name: its affinity cookie's value, and shown in other replicas' busy errors (default HOSTNAME:PORT)")
	f.tlsCert = fs.String("tls-cert", "", "serve https:// with this PEM certificate (chain) file; needs --tls-key")
	f.tlsKey = fs.String("tls-key", "", "the PEM private key of --tls-cert")
	f.metricsTokenFile = fs.String("metrics-token-file", "", "file holding the operator's token, the one that reads /metrics and why /readyz fails (default: "+metricsTokenEnv+"); with --tokens-file no tenant's token does")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, gatewayUsage)
			printFlags(stdout, fs)
			printHelpFooter(stdout, "A shared gateway")
			return nil
		}
		return fmt.Errorf("gateway: %w", flagError(fs, err, "acp-agent gateway"))
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("gateway: unexpected argument %q: it takes flags only (see acp-agent gateway --help)", fs.Arg(0))
	}
	tokens, err := gatewayTokens(*f.tokenFile, *f.tokensFile)
	if err != nil {
		return err
	}
	operator, err := operatorToken(*f.metricsTokenFile, tokens)
	if err != nil {
		return err
	}
	shared := *f.tokensFile != "" // tenants share the gateway
	authToken := ""
	if len(tokens) > 0 {
		authToken = "tokens"
	}
	if err := checkListen(*f.listen, authToken, tokenEnv); err != nil {
		return err
	}
	if (*f.tlsCert == "") != (*f.tlsKey == "") {
		return errors.New("--tls-cert and --tls-key go together: give both, or neither for http://")
	}
	var allowed []string
	for _, o := range strings.Split(*f.origins, ",") {
		if o = strings.TrimSpace(o); o != "" {
			if err := checkOrigin(o); err != nil {
				return err
			}
			allowed = append(allowed, o)
		}
	}
	if *f.replica == "" {
		*f.replica = replicaName(*f.listen)
	}
	env, ctx, err := f.common.start(stderr)
	if err != nil {
		return err
	}
	defer env.close()
	log, cfg := env.log, env.cfg
	ms, err := env.models()
	if err != nil {
		return err
	}
	base, err := cfg.gatewayCoreOptions()
	if err != nil {
		return err
	}
	st, err := openGatewayStore(*f.store, cfg.Store, log)
	if err != nil {
		return err
	}
	defer st.Close()
	met := metrics.New(&metrics.Options{Tenants: shared})
	// One turn of a session at a time: fleet-wide on PostgreSQL (its
	// advisory locks, with fencing tokens), else in this process.
	leases, ok := st.(store.Leases)
	if !ok {
		leases = &store.LocalLeases{}
	}
	base.Leases, base.Replica, base.RemoteClients = store.HideLeaseErrors(leases, hideStoreError(log)), *f.replica, true
	cores := &tenantCores{base: base, store: st, models: ms, cfg: cfg, met: met, log: log, cores: map[string]*tenantCore{}}
	defer cores.shutdown()
	met.ServerStates(cores.serverStates)
	cfg.observe(met)
	handlers := acp.NewHandlers() // every connection's, so idle ones are kept for the process, not each
	defer handlers.Close()
	h := remote.NewHandler(func(tenant string) (remote.Conn, error) {
		return acp.New(cores.get(tenant), &acp.Options{Name: "acp-agent", Version: agentVersion(), Logger: log.With("tenant", tenant), Handlers: handlers}), nil
	}, &remote.Options{
		Authenticate: remote.BearerAuth(tokens), AllowedOrigins: allowed, LoopbackHost: len(tokens) == 0,
		Replica: *f.replica, Limits: cfg.Gateway.Limits.remote(), Observer: met.Transport(), Logger: log,
	})
	mux := http.NewServeMux()
	mux.Handle(acpPath, h)
	met.Mount(mux, &metrics.HandlerOptions{Ready: storeReady(st), Authorized: operatorAuth(operator, tokens, shared), Logger: log})
	return serveGateway(ctx, &f, mux, h, log)
}

// gatewayTokens reads the tokens a gateway's clients present, mapped to
// their tenants: --token-file's (or the environment's) is tenant "", each
// --tokens-file line's its own. Empty: no credentials are asked.
func gatewayTokens(tokenFile, tokensFile string) (map[string]string, error) {
	token, err := listenerToken("--token-file", tokenFile, tokenEnv)
	if err != nil {
		return nil, err
	}
	tokens := map[string]string{}
	if tokensFile != "" {
		if tokens, err = readTokensFile(tokensFile, "tenant"); err != nil {
			return nil, err
		}
	}
	if token != "" {
		if t, dup := tokens[token]; dup {
			return nil, fmt.Errorf("--tokens-file %s gives the default tenant's token (--token-file or %s) to tenant %s: each token names one tenant", tokensFile, tokenEnv, t)
		}
		tokens[token] = ""
	}
	return tokens, nil
}

// serveGateway serves mux on --listen (TLS with --tls-cert; HTTP/2 and,
// without TLS, h2c) until ctx is done, then ends every ACP connection (h)
// and stops the server.
func serveGateway(ctx context.Context, f *gatewayFlags, mux http.Handler, h *remote.Handler, log *slog.Logger) error {
	ln, err := net.Listen("tcp", *f.listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetHTTP2(true)
	scheme := "https"
	if *f.tlsCert == "" {
		protocols.SetUnencryptedHTTP2(true)
		scheme = "http"
	}
	hs := &http.Server{
		// ReadTimeout bounds reading a request (a POST's body): an SSE
		// response may last, a WebSocket sets deadlines of its own.
		Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 2 * time.Minute, IdleTimeout: 2 * time.Minute, Protocols: protocols,
		TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12},
		ErrorLog:  slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	errc := make(chan error, 1)
	go func() {
		if *f.tlsCert != "" {
			errc <- hs.ServeTLS(ln, *f.tlsCert, *f.tlsKey)
			return
		}
		errc <- hs.Serve(ln)
	}()
	log.Info("gateway listening", "url", scheme+"://"+ln.Addr().String()+acpPath, "replica", *f.replica)
	select {
	case err = <-errc:
		return fmt.Errorf("--listen %s: %w", *f.listen, err)
	case <-ctx.Done():
	}
	log.Info("shutting down: ending every ACP connection")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h.Shutdown(sctx)
	if hs.Shutdown(sctx) != nil {
		_ = hs.Close()
	}
	log.Info("stopped")
	return nil
}

// tenantCores are a gateway's session cores, one per tenant, made on the
// tenant's first connection: each over the tenant's view of the store
// (store.ForTenant), with a History, a runner (its tools registry: session
// keys are the tenant's), and sign-in grants of its own, so tenants share
// nothing but the models and the store; CoreOptions.Tenant names the
// tenant in its turns' traces and audit records. Safe for concurrent use.
type tenantCores struct {
	base   session.CoreOptions
	store  store.Store
	models []gateway.Model
	cfg    *Config
	met    *metrics.Metrics
	log    *slog.Logger

	mu    sync.Mutex
	cores map[string]*tenantCore
}

type tenantCore struct {
	core    *session.Core
	history *session.History
}

// get returns tenant's core, making it on first use.
func (t *tenantCores) get(tenant string) *session.Core {
	t.mu.Lock()
	defer t.mu.Unlock()
	if tc := t.cores[tenant]; tc != nil {
		return tc.core
	}
	log := t.log
	if tenant != "" {
		log = log.With("tenant", tenant)
	}
	opts := t.base
	opts.Tenant = tenant // the runner's traces and audit log name it
	opts.Store = store.ForTenant(t.store, tenant, &store.TenantOptions{HideError: hideStoreError(log)})
	opts.History = session.NewHistory(opts.Store, log)
	opts.History.ObserveCommits(t.met.StoreCommit)
	ropts := t.cfg.runnerOptions(t.models, opts.History, log)
	ropts.Observer = t.met
	opts.Gateway = runner.NewLocal(ropts)
	oauth := *t.base.Bridge.OAuth
	oauth.Store = signin.NewMemory() // a tenant's grants are its own
	opts.Bridge.OAuth = &oauth
	opts.Bridge.Admit = admit(t.cfg.managed.ForTenant(tenant)) // the managed policy's, with the tenant's lists
	opts.Observer, opts.Logger = t.met, log
	opts.Name, opts.Version = "acp-agent", agentVersion()
	tc := &tenantCore{core: session.NewCore(&opts), history: opts.History}
	t.cores[tenant] = tc
	return tc.core
}

// serverStates sums the tenants' MCP servers by state, for /metrics.
func (t *tenantCores) serverStates() map[string]int {
	t.mu.Lock()
	cores := make([]*tenantCore, 0, len(t.cores))
	for _, tc := range t.cores {
		cores = append(cores, tc)
	}
	t.mu.Unlock()
	out := map[string]int{}
	for _, tc := range cores {
		for state, n := range tc.core.ServerStates() {
			out[state] += n
		}
	}
	return out
}

// shutdown ends every tenant's sessions, in parallel, and closes their
// histories (their commits under way finish first).
func (t *tenantCores) shutdown() {
	t.mu.Lock()
	cores := slices.Collect(maps.Values(t.cores))
	t.mu.Unlock()
	var wg sync.WaitGroup
	for _, tc := range cores {
		wg.Go(func() {
			tc.core.Shutdown()
			_ = tc.history.Close()
		})
	}
	wg.Wait()
}

// GatewayConfig is config "gateway": what "acp-agent gateway" lets its
// clients do, and their limits.
type GatewayConfig struct {
	// AllowCommands are the programs a client's stdio MCP server entry may
	// run on the gateway host, as the entry names them ("uvx") or as the
	// absolute path that name resolves to; its args are the client's, so
	// list only programs whose arguments cannot make them run anything
	// (not npx, a shell, an interpreter). A stdio entry of any other
	// command fails, naming "acp-agent connect", which starts the editor's
	// stdio servers on the editor's machine. The config's own mcpServers
	// are the operator's and always run. Empty: none.
	AllowCommands []string `json:"allowCommands"`
	// Limits bound each client; zero fields take the defaults (see
	// acp/remote.Limits).
	Limits GatewayLimits `json:"limits"`
}

// GatewayLimits is config "gateway.limits".
type GatewayLimits struct {
	// MaxConnectionsPerTenant: open connections per token's tenant (64).
	MaxConnectionsPerTenant int `json:"maxConnectionsPerTenant"`
	// MaxConnections: open connections in all (4096).
	MaxConnections int `json:"maxConnections"`
	// MaxBufferedBytes: a connection's output its client has not read
	// (16 MiB).
	MaxBufferedBytes int `json:"maxBufferedBytes"`
	// MaxMessageBytes: one client message (and the most, 10 MiB).
	MaxMessageBytes int `json:"maxMessageBytes"`
	// OutputStall: how long a client may read none of its output (60s).
	OutputStall Duration `json:"outputStall"`
	// IdleTimeout: an HTTP connection with no stream and no request, or a
	// WebSocket that answers no ping, that long ends (5m).
	IdleTimeout Duration `json:"idleTimeout"`
}

// remote returns the limits as acp/remote takes them.
func (l GatewayLimits) remote() remote.Limits {
	return remote.Limits{
		MaxConnectionsPerTenant: l.MaxConnectionsPerTenant, MaxConnections: l.MaxConnections,
		MaxBufferedBytes: l.MaxBufferedBytes, MaxMessageBytes: l.MaxMessageBytes,
		OutputStall: time.Duration(l.OutputStall), IdleTimeout: time.Duration(l.IdleTimeout),
	}
}

// gatewayCoreOptions are coreOptions for a gateway's sessions, whose
// clients are on other machines: the built-in tools work through the
// editor alone, a client's URL may not reach this host's loopback (unless
// sandbox.allowHosts lists it), and a stdio server starts only if it is
// one of the config's own or its command is in gateway.allowCommands.
func (c *Config) gatewayCoreOptions() (session.CoreOptions, error) {
	opts, err := c.coreOptions()
	if err != nil {
		return opts, err
	}
	opts.InProcess = c.Tools.inProcess(true)
	urls := *opts.Bridge.URLs
	urls.RefuseLoopback = true
	opts.Bridge.URLs = &urls
	allowed := &commandAllowList{commands: c.Gateway.AllowCommands, servers: opts.DefaultServers}
	opts.Bridge.StdioPolicy = allowed.check
	return opts, nil
}

// commandAllowList is a gateway's rule for stdio servers: the config's
// own servers (the operator's, by command and args) and the commands of
// gateway.allowCommands (with any args) may run on this host.
type commandAllowList struct {
	commands []string
	servers  []bridge.ServerSpec
}

// check is bridge.Options.StdioPolicy: nil, or a *bridge.StdioRefusedError.
func (l *commandAllowList) check(spec bridge.ServerSpec) error {
	for _, d := range l.servers {
		if d.Transport == bridge.TransportStdio && d.Command == spec.Command && slices.Equal(d.Args, spec.Args) {
			return nil
		}
	}
	got := resolveCommand(spec.Command)
	for _, a := range l.commands {
		if a == spec.Command || got != "" && resolveCommand(a) == got {
			return nil
		}
	}
	return &bridge.StdioRefusedError{Server: spec.Name, Command: spec.Command}
}

// resolveCommand is the absolute path cmd runs (looked up in PATH when it
// is a bare name), cleaned, or "" when there is none.
func resolveCommand(cmd string) string {
	p, err := exec.LookPath(cmd)
	if err != nil {
		return ""
	}
	if abs, err := filepath.Abs(p); err == nil {
		return filepath.Clean(abs)
	}
	return ""
}

// hideStoreError is a gateway's store.TenantOptions.HideError: the
// store's own errors (they name its database, host or file) are logged
// whole, with what to do about a file's (gateway.ErrorText), under a fresh
// reference, and the tenant is told the reference only.
func hideStoreError(log *slog.Logger) func(error) error {
	return func(err error) error {
		var b [4]byte
		_, _ = rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
		ref := hex.EncodeToString(b[:])
		log.Error("the session store failed", "ref", ref, "err", gateway.ErrorText(err))
		return &store.HiddenError{Ref: ref}
	}
}

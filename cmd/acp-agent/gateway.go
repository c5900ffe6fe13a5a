package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/seed02d3eb6b/acp-agent/gateway/remote"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
	"github.com/seed02d3eb6b/acp-agent/internal/metrics"
)

// tokenEnv holds the gateway token when no --token-file is given.
const tokenEnv = "ACP_AGENT_GATEWAY_TOKEN"

// gatewayToken reads the token from file, else from ACP_AGENT_GATEWAY_TOKEN.
func gatewayToken(file string) (string, error) { return readToken(file, tokenEnv) }

// readToken reads a token from file (--token-file), else from the
// environment variable envName; "" means none.
func readToken(file, envName string) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("--token-file: %w", err)
		}
		t := strings.TrimSpace(string(b))
		if t == "" {
			return "", fmt.Errorf("--token-file %s is empty", file)
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
// --listen) requires of its clients, from file (--token-file) or the
// environment variable envName, and refuses one that others can guess or
// read: shorter than minTokenChars, fewer than minTokenDistinct different
// characters, or in a file that group or others can read or write. ""
// means none.
func listenerToken(file, envName string) (string, error) {
	if file != "" {
		fi, err := os.Stat(file)
		if err != nil {
			return "", fmt.Errorf("--token-file: %w", err)
		}
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			return "", fmt.Errorf("--token-file %s is readable or writable by group or others (mode %04o): it holds a secret; chmod 600 it", file, perm)
		}
	}
	token, err := readToken(file, envName)
	if token == "" || err != nil {
		return token, err
	}
	from := "--token-file " + file
	if file == "" {
		from = envName
	}
	distinct := map[rune]bool{}
	for _, r := range token {
		distinct[r] = true
	}
	if len(token) < minTokenChars || len(distinct) < minTokenDistinct {
		return "", fmt.Errorf("%s: the token has %d characters (%d different): a listener's token needs at least %d, of at least %d different characters; make one with: openssl rand -hex 32",
			from, len(token), len(distinct), minTokenChars, minTokenDistinct)
	}
	return token, nil
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

Serve the agent runtime (models, permissions policy, turns) as a WebSocket
service at ws://HOST:PORT for remote translators: "acp-agent --gateway URL"
runs the ACP front end on the editor's machine and the turns here (the
README, section "A shared gateway"). The host must be named; a non-loopback address
needs a token (--token-file, or ` + tokenEnv + `), or tenants' tokens
(--tokens-file). With --store the gateway keeps its translators' sessions
("acp-agent --gateway URL --store gateway"); replicas sharing one store
form a fleet: a session's turn runs on one replica at a time. The listener
also serves /healthz, /readyz (the store answers) and Prometheus /metrics
(with a token: the token, or a tenant's, as bearer).

Flags:
`

// runGateway is "acp-agent gateway": the agent runtime as a WebSocket
// service for many translators (docs/gateway-protocol.md).
func runGateway(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("acp-agent gateway", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned (main prints them once), help goes to stdout
	common := addCommonFlags(fs)
	listen := fs.String("listen", "127.0.0.1:7777", "address to listen on, with an explicit host")
	tokenFile := fs.String("token-file", "", "file holding the shared token (default: "+tokenEnv+")")
	origins := fs.String("allowed-origins", "", "comma-separated Origin values accepted from browsers (none by default)")
	tokensFile := fs.String("tokens-file", "", `file of "TENANT TOKEN" lines, one tenant's token a line (mode 600): each tenant sees only its own sessions`)
	storeFlag := fs.String("store", "", `keep the translators' sessions (for "acp-agent --store gateway"): a SQLite file, "memory", or the fleet's postgres:// URL (password from PGPASSWORD or ~/.pgpass) (default: none)`)
	replica := fs.String("replica-name", "", "this replica's name, shown in the busy errors of other replicas (default HOSTNAME:PORT)")
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
	token, err := listenerToken(*tokenFile, tokenEnv)
	if err != nil {
		return err
	}
	var tenants map[string]string
	if *tokensFile != "" {
		if tenants, err = readTokensFile(*tokensFile, "tenant"); err != nil {
			return err
		}
		if _, dup := tenants[token]; dup && token != "" {
			return fmt.Errorf("--tokens-file %s gives the default tenant's token (--token-file or %s) to tenant %s: each token names one tenant", *tokensFile, tokenEnv, tenants[token])
		}
	}
	authToken := token
	if authToken == "" && len(tenants) > 0 {
		authToken = "tokens-file"
	}
	if err := checkListen(*listen, authToken, tokenEnv); err != nil {
		return err
	}
	if *replica == "" {
		*replica = replicaName(*listen)
	}
	env, err := common.setup(stderr)
	if err != nil {
		return err
	}
	defer env.close()
	log := env.log
	ms, err := env.models()
	if err != nil {
		return err
	}
	met := metrics.New()
	ropts := env.cfg.runnerOptions(ms, nil, log)
	ropts.Observer = met
	local := runner.NewLocal(ropts)
	var allowed []string
	for _, o := range strings.Split(*origins, ",") {
		if o = strings.TrimSpace(o); o != "" {
			if err := checkOrigin(o); err != nil {
				return err
			}
			allowed = append(allowed, o)
		}
	}
	store, err := openGatewayStore(*storeFlag, log)
	if err != nil {
		return err
	}
	if store != nil {
		defer store.Close()
	}
	srv := remote.NewServer(local, &remote.ServerOptions{Token: token, Tokens: tenants, AllowedOrigins: allowed, Store: store, Replica: *replica,
		Info: remote.PeerInfo{Name: "acp-agent gateway", Version: agentVersion()}, Observer: met, Logger: log})
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	// /healthz, /readyz and /metrics beside the WebSocket service, which
	// has every other path; /metrics takes the token or a tenant's.
	mux := http.NewServeMux()
	mux.Handle("/", srv)
	met.Mount(mux, &metrics.HandlerOptions{Ready: storeReady(store), Authorized: metrics.BearerAuth(append(slices.Collect(maps.Keys(tenants)), token)...)})
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	log.Info("gateway listening", "url", "ws://"+ln.Addr().String(), "auth", authToken != "", "tenants", len(tenants), "store", *storeFlag != "", "replica", *replica)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: ending running turns")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv.Shutdown(sctx)
	_ = hs.Shutdown(sctx)
	log.Info("stopped")
	return nil
}

// Command oauthserver runs the OAuth-protected MCP server of package
// internal/oauthtest for tests in another process (e2e tests of acp-agent's
// remote sign-in).
//
// It listens on two loopback ports and prints one JSON line on stdout (see
// oauthtest.Ready):
//
//	{"url":"http://127.0.0.1:P/mcp","issuer":"http://127.0.0.1:P","control":"http://127.0.0.1:Q"}
//
// url is the MCP endpoint and its authorization server; control serves
// /_counts, /_tokens and /_revoke_all (oauthtest.Control is its client). It
// runs until its stdin closes or it gets SIGTERM or SIGINT. Diagnostics go to
// stderr.
//
// Flags:
//
//	-ttl D             access token lifetime (default 1h); under 10s a golang.org/x/oauth2 client refreshes before every request
//	-no-dcr            no dynamic client registration (needs -client-id)
//	-client-id ID      a preregistered client; its secret, if any, comes from $OAUTH_FIXTURE_CLIENT_SECRET
//	-scopes A,B        scopes_supported (default mcp:tools)
//	-offline-access    advertise offline_access
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/seed02d3eb6b/acp-agent/internal/oauthtest"
)

func main() {
	log.SetOutput(os.Stderr)
	log.SetPrefix("oauthserver: ")
	log.SetFlags(0)
	ttl := flag.Duration("ttl", time.Hour, "access token lifetime")
	noDCR := flag.Bool("no-dcr", false, "turn dynamic client registration off (needs -client-id)")
	clientID := flag.String("client-id", "", "preregistered client ID; its secret comes from $OAUTH_FIXTURE_CLIENT_SECRET")
	scopes := flag.String("scopes", "mcp:tools", "comma-separated scopes_supported")
	offline := flag.Bool("offline-access", false, "advertise the offline_access scope")
	flag.Parse()
	if err := run(oauthtest.Options{
		TokenTTL:                  *ttl,
		Scopes:                    strings.Split(*scopes, ","),
		PreregisteredClientID:     *clientID,
		PreregisteredClientSecret: os.Getenv("OAUTH_FIXTURE_CLIENT_SECRET"),
		NoDCR:                     *noDCR,
		OfflineAccess:             *offline,
	}); err != nil {
		log.Fatal(err)
	}
}

func run(opts oauthtest.Options) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()

	s, err := oauthtest.Start(opts)
	if err != nil {
		return err
	}
	defer s.Close()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("control listener: %w", err)
	}
	control := &http.Server{Handler: s.ControlHandler(), ReadHeaderTimeout: 10 * time.Second}
	var serveErr error
	served := make(chan struct{}) // closed when Serve has returned, serveErr set
	go func() {
		serveErr = control.Serve(ln)
		close(served)
	}()
	defer func() {
		control.Close()
		<-served
	}()

	line, err := json.Marshal(oauthtest.Ready{URL: s.URL(), Issuer: s.Issuer(), Control: "http://" + ln.Addr().String()})
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(os.Stdout, "%s\n", line); err != nil {
		return fmt.Errorf("printing the ready line: %w", err)
	}

	// The stdin reader ends with the process: a read on a pipe cannot be
	// interrupted, and nothing waits on it once we return.
	stdinClosed := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(stdinClosed)
	}()
	select {
	case <-stdinClosed:
		log.Print("stdin closed, stopping")
	case <-ctx.Done():
		log.Print("signalled, stopping")
	case <-served:
		return fmt.Errorf("control server: %w", serveErr)
	}
	return nil
}

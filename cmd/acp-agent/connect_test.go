package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seed02d3eb6b/acp-agent/acp"
	"github.com/seed02d3eb6b/acp-agent/acp/connect"
	"github.com/seed02d3eb6b/acp-agent/session"
)

func TestConnect_Arguments(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "the gateway's URL is missing"},
		{[]string{"wss://gw.example/acp", "--verbose"}, `unexpected argument "--verbose" after the URL: flags go before it`},
		{[]string{"--tokn-file", "f", "wss://gw.example/acp"}, "unknown flag --tokn-file: did you mean --token-file?"},
		{[]string{"gw.example/acp"}, "want the gateway's /acp endpoint"},
		{[]string{"ftp://gw.example/acp"}, "the scheme must be https, wss"},
		{[]string{"ws://gw.example/acp"}, "ws:// would send the token and every message unencrypted; use wss://"},
		{[]string{"http://gw.example/acp"}, "use https://"},
		{[]string{"wss://me:pw@gw.example/acp"}, "carries credentials"},
		{[]string{"--token-file", "/nonexistent/token", "wss://gw.example/acp"}, "--token-file"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(append([]string{"connect"}, tc.args...), strings.NewReader(""), &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("connect %q = %v, want an error saying %q", tc.args, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("connect %q: the error shows the URL's token: %v", tc.args, err)
		}
		if stdout.Len() > 0 {
			t.Errorf("connect %q wrote on stdout, the editor's channel: %q", tc.args, stdout.String())
		}
	}
}

// A gateway that refuses the token ends connect at once, saying so: no
// retrying can fix a refused token.
func TestConnect_RefusedTokenEndsAtOnce(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv(tokenEnv, "not-the-gateways-token-0123456789abcdef")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "the bearer token is not one of this gateway's", http.StatusUnauthorized)
	}))
	defer srv.Close()
	in, w := io.Pipe() // the editor stays
	defer w.Close()
	done := make(chan error, 1)
	go func() { done <- run([]string{"connect", srv.URL + "/acp"}, in, io.Discard, io.Discard) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "401") {
			t.Errorf("connect to a gateway that refuses the token: %v, want the 401", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("connect still retries a refused token")
	}
}

func TestConnect_Help(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	var stdout bytes.Buffer
	if err := run([]string{"help", "connect"}, strings.NewReader(""), &stdout, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Usage: acp-agent connect [flags] URL", "--token-file FILE", tokenEnv, "--config", "--log-file", "agent_servers"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("connect --help lacks %q:\n%s", want, stdout.String())
		}
	}
}

// TestConnect_ProxiesToTheGateway: with a dialer (here, to an in-process
// agent), connect carries the editor's messages to the gateway and back,
// logs to --log-file, and ends when stdin closes.
func TestConnect_ProxiesToTheGateway(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	core := session.NewCore(nil)
	t.Cleanup(core.Shutdown)
	var agents []chan struct{}
	t.Cleanup(func() {
		for _, done := range agents {
			<-done
		}
	})
	var dialedURL, dialedToken string
	dialer := func(gatewayURL, token string, _ *slog.Logger) (connect.DialFunc, error) {
		dialedURL, dialedToken = gatewayURL, token
		return func(context.Context) (connect.Link, error) {
			gwIn, out := io.Pipe()
			in, gwOut := io.Pipe()
			done := make(chan struct{})
			agents = append(agents, done)
			go func() {
				defer close(done)
				_ = acp.New(core, nil).ServeStream(context.Background(), acp.NewLineStream(gwIn, gwOut))
				_ = gwOut.Close()
			}()
			return &pipeLink{Stream: acp.NewLineStream(in, out), in: in, out: out}, nil
		}, nil
	}
	t.Setenv(tokenEnv, "a-token")
	logFile := filepath.Join(t.TempDir(), "connect.log")
	stdin, editorOut := io.Pipe()
	stdoutR, stdout := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		errc <- connectWith([]string{"--log-file", logFile, "ws://127.0.0.1:7777/acp"}, stdin, stdout, io.Discard, dialer)
		_ = stdout.Close()
	}()
	if _, err := editorOut.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdoutR).ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		ID     int `json:"id"`
		Result struct {
			AgentInfo struct{ Name string } `json:"agentInfo"`
		} `json:"result"`
	}
	if err := json.Unmarshal(line, &res); err != nil || res.ID != 1 || res.Result.AgentInfo.Name != "acp-agent" {
		t.Fatalf("the editor got %s (%v), want the gateway's initialize response", line, err)
	}
	_ = editorOut.Close()
	go func() { _, _ = io.Copy(io.Discard, stdoutR) }()
	select {
	case err := <-errc:
		if err != nil {
			t.Errorf("connect = %v, want nil when stdin closes", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("connect did not end when stdin closed")
	}
	if dialedURL != "ws://127.0.0.1:7777/acp" || dialedToken != "a-token" {
		t.Errorf("dialer got %q, %q; want the URL and the token of %s", dialedURL, dialedToken, tokenEnv)
	}
	logs, _ := os.ReadFile(logFile)
	if !strings.Contains(string(logs), "connected to the gateway") {
		t.Errorf("--log-file has no connection:\n%s", logs)
	}
}

// pipeLink is a connect.Link over pipes to an in-process agent.
type pipeLink struct {
	acp.Stream
	in  *io.PipeReader
	out *io.PipeWriter
}

func (l *pipeLink) Close() error {
	_ = l.out.Close()
	return l.in.Close()
}

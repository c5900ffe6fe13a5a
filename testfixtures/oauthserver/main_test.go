package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seed02d3eb6b/acp-agent/internal/oauthtest"
)

// TestOAuthServer builds the command, reads its ready line, checks the MCP
// endpoint demands a token and the control port reports it, and stops it by
// closing stdin or by SIGTERM.
func TestOAuthServer(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "oauthserver")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, stop := range []string{"stdin", "sigterm"} {
		t.Run(stop, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "-no-dcr", "-client-id", "pre", "-ttl", "9s")
			cmd.Env = []string{"OAUTH_FIXTURE_CLIENT_SECRET=s3cret"}
			cmd.Stderr = os.Stderr
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			line, err := bufio.NewReader(stdout).ReadString('\n')
			if err != nil {
				t.Fatalf("reading the ready line: %v", err)
			}
			var ready oauthtest.Ready
			if err := json.Unmarshal([]byte(line), &ready); err != nil {
				t.Fatalf("ready line %q: %v", line, err)
			}
			if !strings.HasPrefix(ready.URL, "http://127.0.0.1:") || ready.URL != ready.Issuer+"/mcp" ||
				!strings.HasPrefix(ready.Control, "http://127.0.0.1:") || ready.Control == ready.Issuer {
				t.Fatalf("ready line = %+v", ready)
			}

			resp, err := http.Post(ready.URL, "application/json", strings.NewReader(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("MCP without a token = %s, want 401", resp.Status)
			}
			// The preregistered confidential client is known: wrong secret.
			resp, err = http.PostForm(ready.Issuer+"/token", map[string][]string{"grant_type": {"authorization_code"}, "client_id": {"pre"}, "client_secret": {"nope"}})
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("token with a wrong secret = %s, want 401", resp.Status)
			}

			c := oauthtest.Control{Base: ready.Control}
			if n, err := c.Counts(ctx); err != nil || n.Unauthorized != 1 {
				t.Errorf("Counts = %+v, %v; want 1 unauthorized", n, err)
			}
			if toks, err := c.Tokens(ctx); err != nil || len(toks) != 0 {
				t.Errorf("Tokens = %q, %v; want none", toks, err)
			}
			if err := c.RevokeAll(ctx); err != nil {
				t.Errorf("RevokeAll: %v", err)
			}

			if stop == "stdin" {
				stdin.Close()
			} else {
				cmd.Process.Signal(syscall.SIGTERM)
			}
			if err := cmd.Wait(); err != nil {
				t.Errorf("exit after %s: %v, want status 0", stop, err)
			}
		})
	}
}

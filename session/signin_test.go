package session

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/editor"
	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
	"github.com/seed02d3eb6b/acp-agent/internal/acpclient"
	"github.com/seed02d3eb6b/acp-agent/internal/oauthtest"
	"github.com/seed02d3eb6b/acp-agent/signin"
)

// tellFrontEnd is a FrontEnd with no editor whose Tell sends each message
// on told.
type tellFrontEnd struct{ told chan string }

func (tellFrontEnd) Editor(string) editor.Editor                               { return nil }
func (tellFrontEnd) Ask(string) gateway.AskFunc                                { return nil }
func (f tellFrontEnd) Tell(_ context.Context, _, text string)                  { f.told <- text }
func (tellFrontEnd) CommandsChanged(context.Context, string, []runner.Command) {}
func (tellFrontEnd) Dial(context.Context, string, bridge.ServerSpec) (mcp.Transport, error) {
	return nil, bridge.ErrUnsupportedTransport
}

// The sign-in errors state the fact; the front-end commands say what to do:
// /logout over a corrupt token file says to delete it, and /servers says
// that /login signs a signed-out server in again.
func TestLogout_SaysWhatToDo(t *testing.T) {
	srv, err := oauthtest.Start(oauthtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	path := filepath.Join(t.TempDir(), "oauth-tokens.json")
	tokens, err := signin.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := newTestCore(t, CoreOptions{Bridge: bridge.Options{OAuth: &bridge.OAuth{Store: tokens}}})
	fe := tellFrontEnd{told: make(chan string, 16)}
	s, err := c.Open(t.Context(), OpenRequest{Cwd: t.TempDir(), FrontEnd: fe,
		Servers: []bridge.ServerSpec{{Name: "remote", Transport: bridge.TransportHTTP, URL: srv.URL()}}})
	if err != nil {
		t.Fatal(err)
	}
	told := func(want string) string {
		t.Helper()
		for {
			select {
			case text := <-fe.told:
				if strings.Contains(text, want) {
					return text
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("no message with %q", want)
			}
		}
	}
	link := regexp.MustCompile(`open (\S+)`).FindStringSubmatch(told("needs you to sign in"))
	if err := acpclient.FollowSignIn(t.Context(), link[1]); err != nil {
		t.Fatal(err)
	}
	told(`MCP server "remote" is connected`)
	run := func(text string) string {
		t.Helper()
		in := Classify(text)
		if in.Kind != InputFrontEnd {
			t.Fatalf("%s is not a front-end command", text)
		}
		return s.Answer(t.Context(), in)
	}

	if err := os.WriteFile(path, []byte(`{"version":7,"records":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	want := `deleting the stored sign-in of MCP server "remote": signin: corrupt token file ` + path + ` (version 7, want 1): delete it and sign in to its MCP servers again.`
	if got := run("/logout remote"); got != want {
		t.Errorf("/logout over a corrupt token file:\n%s\nwant\n%s", got, want)
	}
	want = "- remote: failed (http): signed out (/logout); /login signs in again"
	if got := run("/servers"); !strings.Contains(got, want) {
		t.Errorf("/servers after /logout:\n%s\nwant a line %q", got, want)
	}
}

// eventsFrontEnd is a tellFrontEnd that takes server events
// (ServerEvents), sending each on events.
type eventsFrontEnd struct {
	tellFrontEnd
	events chan any // ServerEvent, or the sign-in link
}

func (f eventsFrontEnd) ServerChanged(_ context.Context, _ string, e ServerEvent) { f.events <- e }
func (f eventsFrontEnd) SignIn(_ context.Context, _, server, authURL string) {
	f.events <- server + " " + authURL
}

// A front end that takes server events gets the sign-in link and the
// connect that follows as events, and no message.
func TestServerEvents_SignInAndConnect(t *testing.T) {
	srv, err := oauthtest.Start(oauthtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	tokens, err := signin.OpenFile(filepath.Join(t.TempDir(), "oauth-tokens.json"))
	if err != nil {
		t.Fatal(err)
	}
	c, _ := newTestCore(t, CoreOptions{Bridge: bridge.Options{OAuth: &bridge.OAuth{Store: tokens}}})
	fe := eventsFrontEnd{tellFrontEnd{told: make(chan string, 16)}, make(chan any, 16)}
	if _, err := c.Open(t.Context(), OpenRequest{Cwd: t.TempDir(), FrontEnd: fe,
		Servers: []bridge.ServerSpec{{Name: "remote", Transport: bridge.TransportHTTP, URL: srv.URL()}}}); err != nil {
		t.Fatal(err)
	}
	next := func() any {
		t.Helper()
		select {
		case e := <-fe.events:
			return e
		case <-time.After(30 * time.Second):
			t.Fatal("no server event in 30s")
			return nil
		}
	}
	link, _ := next().(string)
	server, authURL, _ := strings.Cut(link, " ")
	if server != "remote" || !strings.HasPrefix(authURL, "http://127.0.0.1") {
		t.Fatalf("sign-in event %q, want remote and its link", link)
	}
	if err := acpclient.FollowSignIn(t.Context(), authURL); err != nil {
		t.Fatal(err)
	}
	if e, _ := next().(ServerEvent); e.Link || e.Status.Name != "remote" || e.Status.State != bridge.StateConnected || e.Status.Tools == 0 {
		t.Errorf("event after the sign-in = %+v, want remote connected with its tools", e)
	}
	select {
	case text := <-fe.told:
		t.Errorf("a message besides the events: %q", text)
	default:
	}
}

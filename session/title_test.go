package session

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
	"github.com/seed02d3eb6b/acp-agent/session/store/memory"
)

// titleModel answers a title request (gateway.PurposeTitle) with title,
// after release is closed when it is not nil, and any other with "ok". It
// records the title requests.
type titleModel struct {
	title   string
	release chan struct{}
	mu      sync.Mutex
	asked   []*gateway.Request
}

func (*titleModel) Name() string { return "title" }

func (m *titleModel) Complete(ctx context.Context, req *gateway.Request, _ func(gateway.Event)) (*gateway.Response, error) {
	text := "ok"
	if req.Purpose == gateway.PurposeTitle {
		m.mu.Lock()
		m.asked = append(m.asked, req)
		m.mu.Unlock()
		if m.release != nil {
			select {
			case <-m.release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		text = m.title
	}
	return &gateway.Response{Message: gateway.Message{Role: gateway.RoleAssistant, Content: []gateway.Content{gateway.TextContent(text)}}, StopReason: gateway.StopEndTurn}, nil
}

// titleFrontEnd is a tellFrontEnd that is a TitleWatcher.
type titleFrontEnd struct {
	tellFrontEnd
	titles chan string
}

func (f titleFrontEnd) TitleChanged(_ context.Context, _, title string) { f.titles <- title }

func newTitleCore(t *testing.T, m *titleModel) *Core {
	t.Helper()
	st := memory.New()
	history := NewHistory(st, nil)
	t.Cleanup(func() { history.Close() }) // after the Core's: its committer ends
	gw := runner.NewLocal(&runner.Options{History: history, Models: []gateway.Model{{ID: "m", Label: "M", Provider: m}}})
	c := NewCore(&CoreOptions{Gateway: gw, Store: st, History: history})
	t.Cleanup(c.Shutdown)
	return c
}

// After the first turn the model writes the session's title from the
// first prompt, in one small request without tools; it replaces the
// prompt's words in the store. No later turn asks again. The test runs in
// a synctest bubble: synctest.Wait returns once the session's background
// title request has ended.
func TestTitle_TheModelWritesIt(t *testing.T) {
	synctest.Test(t, testTitleTheModelWritesIt)
}

func testTitleTheModelWritesIt(t *testing.T) {
	m := &titleModel{title: `Title: "Refactor the parser."`}
	c := newTitleCore(t, m)
	fe := titleFrontEnd{tellFrontEnd{told: make(chan string, 8)}, make(chan string, 8)}
	s, err := c.Open(t.Context(), OpenRequest{Cwd: t.TempDir(), FrontEnd: fe})
	if err != nil {
		t.Fatal(err)
	}
	for _, prompt := range []string{"please refactor the parser in parse.go\nit is too long", "thanks"} {
		if _, err := s.Prompt(t.Context(), PromptRequest{Content: []gateway.Content{gateway.TextContent(prompt)}}); err != nil {
			t.Fatal(err)
		}
	}
	synctest.Wait()
	rec, _ := c.Store().Get(t.Context(), s.ID())
	if title := rec.Title; title != "Refactor the parser" {
		t.Fatalf("stored title %q, want the model's, cleaned", title)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.asked) != 1 {
		t.Fatalf("%d title requests, want 1", len(m.asked))
	}
	r := m.asked[0]
	if r.MaxTokens != titleMaxTokens || len(r.Tools) != 0 || len(r.Messages) != 1 || !strings.HasPrefix(gateway.PromptText(r.Messages[0].Content), "please refactor the parser") {
		t.Errorf("title request: max tokens %d, %d tools, %d messages %+v", r.MaxTokens, len(r.Tools), len(r.Messages), r.Messages)
	}
}

// A title the client sets before the model's arrives wins: the model's is
// dropped, and the front end is not told of it.
func TestTitle_TheClientsWins(t *testing.T) {
	m := &titleModel{title: "Model title", release: make(chan struct{})}
	c := newTitleCore(t, m)
	fe := titleFrontEnd{tellFrontEnd{told: make(chan string, 8)}, make(chan string, 8)}
	s, err := c.Open(t.Context(), OpenRequest{Cwd: t.TempDir(), FrontEnd: fe})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prompt(t.Context(), PromptRequest{Content: []gateway.Content{gateway.TextContent("hello")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SetTitle(t.Context(), s.ID(), "Mine"); err != nil {
		t.Fatal(err)
	}
	close(m.release)
	s.End() // waits for the title request
	rec, err := c.Store().Get(t.Context(), s.ID())
	if err != nil || rec.Title != "Mine" {
		t.Errorf("stored title %q, %v; want the client's", rec.Title, err)
	}
	select {
	case title := <-fe.titles:
		t.Errorf("the front end was told of %q", title)
	default:
	}
}

func TestCleanTitle(t *testing.T) {
	for in, want := range map[string]string{
		"Refactor the parser":                      "Refactor the parser",
		"\n  **Title:** \"Fix the  login bug.\"\n": "Fix the login bug",
		"« Déployer le service »":                  "Déployer le service",
		"   \n\n":                                  "",
		// A model's title reaches the editor's session list and, through
		// some clients, a terminal's title bar: no escapes, no bidi.
		"\u001b]0;PWNED\u0007\u001b[2JTitle: Fix \u202egnp.exe\u200b": "Fix gnp.exe",
		"\u001b[2J\u202e\nThe real title":                             "The real title",
		strings.Repeat("word ", 40):                                   strings.TrimSpace(strings.Repeat("word ", 16))[:79] + "…",
	} {
		if got := cleanTitle(in); got != want {
			t.Errorf("cleanTitle(%q) = %q, want %q", in, got, want)
		}
	}
}

// Neither the first prompt's words nor the model's title is stored or
// told to the front end with escape sequences, control or format
// characters: both are one line of visible text.
func TestTitle_EscapesNeverStored(t *testing.T) {
	m := &titleModel{title: "\u001b]0;PWNED\u0007\u001b[2J… \u202egnp.exe\u200b", release: make(chan struct{})}
	c := newTitleCore(t, m)
	fe := titleFrontEnd{tellFrontEnd{told: make(chan string, 8)}, make(chan string, 8)}
	s, err := c.Open(t.Context(), OpenRequest{Cwd: t.TempDir(), FrontEnd: fe})
	if err != nil {
		t.Fatal(err)
	}
	prompt := "\u001b]2;PWNED\u0007please \u001b[31mrefactor\u001b[0m \u2066it\u2069\nmore"
	if _, err := s.Prompt(t.Context(), PromptRequest{Content: []gateway.Content{gateway.TextContent(prompt)}}); err != nil {
		t.Fatal(err)
	}
	stored := func() string {
		rec, _ := c.Store().Get(t.Context(), s.ID())
		return rec.Title
	}
	// The model's title is held back: the first prompt's words are the
	// title meanwhile.
	// The turn was stored, with its title, before Prompt returned.
	got := stored()
	if got == "" {
		t.Fatal("no title after the first turn")
	}
	if got != "please refactor it" {
		t.Errorf("title from the first prompt = %q, want %q", got, "please refactor it")
	}
	close(m.release)
	select {
	case got := <-fe.titles:
		if got != "… gnp.exe" {
			t.Errorf("the front end was told the model's title %q, want %q", got, "… gnp.exe")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the front end was not told the model's title")
	}
	if got := stored(); got != "… gnp.exe" {
		t.Errorf("stored model's title = %q, want %q", got, "… gnp.exe")
	}
}

package acp

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
	"github.com/seed02d3eb6b/acp-agent/internal/acpclient"
	"github.com/seed02d3eb6b/acp-agent/session"
	"github.com/seed02d3eb6b/acp-agent/session/store"
	"github.com/seed02d3eb6b/acp-agent/session/store/sqlite"
)

// requestError returns err as the JSON-RPC error the client got.
func requestError(t *testing.T, err error) *acpsdk.RequestError {
	t.Helper()
	var re *acpsdk.RequestError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v, want a JSON-RPC error", err)
	}
	return re
}

func TestAgent_InitializeAdvertisesLoadSession(t *testing.T) {
	h := startAgent(t)
	res, err := h.conn.Initialize(t.Context(), acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber})
	if err != nil || !res.AgentCapabilities.LoadSession {
		t.Errorf("initialize: loadSession = %v, %v; want true", res.AgentCapabilities.LoadSession, err)
	}
}

// Every method that takes a sessionId answers an unknown one with ACP's
// resource-not-found error naming it.
func TestAgent_UnknownSessionIsResourceNotFound(t *testing.T) {
	h := startAgent(t)
	const sid = "sess_NOPE"
	ctx := t.Context()
	cwd := t.TempDir()
	calls := map[string]func() error{
		"session/prompt": func() error {
			_, err := h.conn.Prompt(ctx, acpsdk.PromptRequest{SessionId: sid, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("hi")}})
			return err
		},
		"session/close": func() error {
			_, err := h.conn.CloseSession(ctx, acpsdk.CloseSessionRequest{SessionId: sid})
			return err
		},
		"session/load": func() error {
			_, err := h.conn.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: sid, Cwd: cwd, McpServers: []acpsdk.McpServer{}})
			return err
		},
		"session/resume": func() error {
			_, err := h.conn.ResumeSession(ctx, acpsdk.ResumeSessionRequest{SessionId: sid, Cwd: cwd})
			return err
		},
		"session/set_config_option": func() error {
			_, err := h.conn.SetSessionConfigOption(ctx, acpsdk.SetSessionConfigOptionRequest{ValueId: &acpsdk.SetSessionConfigOptionValueId{SessionId: sid, ConfigId: "model", Value: "direct"}})
			return err
		},
		"session/set_mode": func() error {
			_, err := h.conn.SetSessionMode(ctx, acpsdk.SetSessionModeRequest{SessionId: sid, ModeId: "code"})
			return err
		},
	}
	for method, call := range calls {
		t.Run(method, func(t *testing.T) {
			re := requestError(t, call())
			if re.Code != -32002 || !strings.HasPrefix(re.Message, "Resource not found: ") || !strings.Contains(re.Message, `"`+sid+`"`) {
				t.Errorf("%s: %d %q, want -32002 naming %s", method, re.Code, re.Message, sid)
			}
		})
	}
}

// Error messages say their class once: "Invalid params: cwd …", never
// "Invalid params: invalid params: …".
func TestAgent_ErrorTextsSayTheirPrefixOnce(t *testing.T) {
	gw := runner.NewLocal(&runner.Options{Models: []gateway.Model{{ID: "a", Provider: &scriptProvider{}}}})
	h := startAgentWith(t, testOptions{Gateway: gw})
	sid := h.newSession()
	ctx := t.Context()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir() // a directory, not the session's
	tests := []struct {
		name, want string
		call       func() error
	}{
		{"relative cwd", `cwd "rel" must be an absolute path`, func() error {
			_, err := h.conn.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: "rel", McpServers: []acpsdk.McpServer{}})
			return err
		}},
		{"missing cwd", `cwd "/nonexistent/dir" does not exist`, func() error {
			_, err := h.conn.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: "/nonexistent/dir", McpServers: []acpsdk.McpServer{}})
			return err
		}},
		{"cwd is a file", `cwd "` + file + `" is not a directory`, func() error {
			_, err := h.conn.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: file, McpServers: []acpsdk.McpServer{}})
			return err
		}},
		{"load with a missing cwd", `cwd "/nonexistent/dir" does not exist`, func() error {
			_, err := h.conn.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(sid), Cwd: "/nonexistent/dir", McpServers: []acpsdk.McpServer{}})
			return err
		}},
		{"resume with a file cwd", `is not a directory`, func() error {
			_, err := h.conn.ResumeSession(ctx, acpsdk.ResumeSessionRequest{SessionId: acpsdk.SessionId(sid), Cwd: file})
			return err
		}},
		{"load in another directory", `is not the cwd of session ` + sid, func() error {
			_, err := h.conn.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(sid), Cwd: other, McpServers: []acpsdk.McpServer{}})
			return err
		}},
		{"resume in another directory", `session/resume: cwd "` + other + `"`, func() error {
			_, err := h.conn.ResumeSession(ctx, acpsdk.ResumeSessionRequest{SessionId: acpsdk.SessionId(sid), Cwd: other})
			return err
		}},
		{"broken mcpServers", `mcpServers[0] name`, func() error {
			_, err := h.conn.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: t.TempDir(), McpServers: []acpsdk.McpServer{acpclient.Stdio("", "x", nil, nil)}})
			return err
		}},
		{"duplicate session key", `_meta.sessionKey`, func() error {
			m := map[string]any{"sessionKey": "k1"}
			if _, err := h.conn.NewSession(ctx, acpsdk.NewSessionRequest{Meta: m, Cwd: t.TempDir(), McpServers: []acpsdk.McpServer{}}); err != nil {
				return err
			}
			_, err := h.conn.NewSession(ctx, acpsdk.NewSessionRequest{Meta: m, Cwd: t.TempDir(), McpServers: []acpsdk.McpServer{}})
			return err
		}},
		{"option not offered", `configId "effort" is not an option of this session`, func() error {
			_, err := h.conn.SetSessionConfigOption(ctx, acpsdk.SetSessionConfigOptionRequest{ValueId: &acpsdk.SetSessionConfigOptionValueId{SessionId: acpsdk.SessionId(sid), ConfigId: "effort", Value: "a"}})
			return err
		}},
		{"unknown model", `config option "model": unknown model "nope"`, func() error {
			_, err := h.conn.SetSessionConfigOption(ctx, acpsdk.SetSessionConfigOptionRequest{ValueId: &acpsdk.SetSessionConfigOptionValueId{SessionId: acpsdk.SessionId(sid), ConfigId: "model", Value: "nope"}})
			return err
		}},
		{"bad cursor", `invalid cursor`, func() error {
			_, err := h.conn.ListSessions(ctx, acpsdk.ListSessionsRequest{Cursor: acpsdk.Ptr("%%%")})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			re := requestError(t, tt.call())
			if re.Code != -32602 || !strings.HasPrefix(re.Message, "Invalid params: ") || strings.Count(strings.ToLower(re.Message), "invalid params") != 1 || !strings.Contains(re.Message, tt.want) {
				t.Errorf("%d %q; want -32602 \"Invalid params: …%s…\" with the prefix once", re.Code, re.Message, tt.want)
			}
		})
	}
}

// session/set_config_option never answers configOptions null, and an
// option the session does not offer is invalid_params naming it.
func TestAgent_SetConfigOption(t *testing.T) {
	two := runner.NewLocal(&runner.Options{Models: []gateway.Model{{ID: "a", Provider: &scriptProvider{}}}}) // a + direct
	h := startAgentWith(t, testOptions{Gateway: two})
	sid := acpsdk.SessionId(h.newSession())
	res, err := h.conn.SetSessionConfigOption(t.Context(), acpsdk.SetSessionConfigOptionRequest{ValueId: &acpsdk.SetSessionConfigOptionValueId{SessionId: sid, ConfigId: "model", Value: "direct"}})
	if err != nil || len(res.ConfigOptions) != 2 || res.ConfigOptions[1].Select.CurrentValue != "direct" {
		t.Errorf("set model: %+v, %v", res, err)
	}
	for _, id := range []acpsdk.SessionConfigId{"effort", "Model"} {
		_, err = h.conn.SetSessionConfigOption(t.Context(), acpsdk.SetSessionConfigOptionRequest{ValueId: &acpsdk.SetSessionConfigOptionValueId{SessionId: sid, ConfigId: id, Value: "x"}})
		if re := requestError(t, err); re.Code != -32602 || !strings.Contains(re.Message, `configId "`+string(id)+`"`) || !strings.Contains(re.Message, "it offers: mode, model") {
			t.Errorf("option %q: %d %q", id, re.Code, re.Message)
		}
	}
	_, err = h.conn.SetSessionConfigOption(t.Context(), acpsdk.SetSessionConfigOptionRequest{Boolean: &acpsdk.SetSessionConfigOptionBoolean{SessionId: sid, ConfigId: "model", Value: true}})
	if re := requestError(t, err); re.Code != -32602 || !strings.Contains(re.Message, `config option "model" takes a value id`) {
		t.Errorf("boolean model: %d %q", re.Code, re.Message)
	}

	// One model: only the mode is offered, so "model" cannot be set.
	one := startAgent(t)
	sid = acpsdk.SessionId(one.newSession())
	_, err = one.conn.SetSessionConfigOption(t.Context(), acpsdk.SetSessionConfigOptionRequest{ValueId: &acpsdk.SetSessionConfigOptionValueId{SessionId: sid, ConfigId: "model", Value: "direct"}})
	if re := requestError(t, err); re.Code != -32602 || !strings.Contains(re.Message, `configId "model" is not an option of this session (it offers: mode)`) {
		t.Errorf("one model: %d %q", re.Code, re.Message)
	}
}

// available_commands_update reaches the client before the answer to the
// session's first prompt, even when the client prompts at once.
func TestAgent_AvailableCommandsBeforeFirstPromptAnswer(t *testing.T) {
	h := startAgent(t)
	hold := make(chan struct{})
	h.agent.beforeAnnounce = func() { <-hold } // the announcement is slow
	res, err := h.conn.NewSession(t.Context(), acpsdk.NewSessionRequest{Cwd: t.TempDir(), McpServers: []acpsdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		res acpsdk.PromptResponse
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := h.conn.Prompt(t.Context(), acpsdk.PromptRequest{SessionId: res.SessionId, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("/help")}})
		done <- result{r, err}
	}()
	var r result
	select {
	case r = <-done: // answered while the announcement is held: the bug
		close(hold)
	case <-time.After(time.Second): // the prompt waits, as it must
		close(hold)
		r = <-done
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	// acp-go-sdk hands the client every notification received before a
	// response before it returns that response.
	for _, n := range h.client.Updates() {
		if n.SessionId == res.SessionId && n.Update.AvailableCommandsUpdate != nil {
			return
		}
	}
	t.Error("the first prompt was answered before available_commands_update was sent")
}

// startStoreAgent starts an agent over the SQLite store at path, with the
// models a and b (a the default) and direct.
func startStoreAgent(t *testing.T, path string, a, b gateway.Provider) *harness {
	t.Helper()
	st, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	hist := session.NewHistory(st, nil)
	gw := runner.NewLocal(&runner.Options{History: hist, Models: []gateway.Model{{ID: "a", Provider: a}, {ID: "b", Provider: b}}})
	return startAgentWith(t, testOptions{Store: st, History: hist, Gateway: gw})
}

// The model chosen for a session is stored, and session/load and
// session/resume in a new agent restore it.
func TestAgent_ModelRestoredByLoadAndResume(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	first := startStoreAgent(t, path, &scriptProvider{}, &scriptProvider{})
	cwd := t.TempDir() // a session reopens in its own cwd
	sid := acpsdk.SessionId(first.newSessionIn(cwd))
	if _, err := first.conn.SetSessionConfigOption(t.Context(), acpsdk.SetSessionConfigOptionRequest{ValueId: &acpsdk.SetSessionConfigOptionValueId{SessionId: sid, ConfigId: "model", Value: "b"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := first.conn.CloseSession(t.Context(), acpsdk.CloseSessionRequest{SessionId: sid}); err != nil {
		t.Fatal(err)
	}

	b := &scriptProvider{responses: []gateway.Response{say("from b"), say("from b again")}}
	second := startStoreAgent(t, path, &scriptProvider{responses: []gateway.Response{say("from a")}}, b)
	loaded, err := second.conn.LoadSession(t.Context(), acpsdk.LoadSessionRequest{SessionId: sid, Cwd: cwd, McpServers: []acpsdk.McpServer{}})
	if err != nil || len(loaded.ConfigOptions) != 2 || loaded.ConfigOptions[1].Select.CurrentValue != "b" {
		t.Fatalf("session/load: %+v, %v; want the model b", loaded, err)
	}
	if _, out := second.prompt(t.Context(), string(sid), "hi"); joinText(out) != "from b" {
		t.Errorf("after load the turn ran on %q, want model b", joinText(out))
	}

	third := startStoreAgent(t, path, &scriptProvider{responses: []gateway.Response{say("from a")}}, b)
	resumed, err := third.conn.ResumeSession(t.Context(), acpsdk.ResumeSessionRequest{SessionId: sid, Cwd: cwd})
	if err != nil || len(resumed.ConfigOptions) != 2 || resumed.ConfigOptions[1].Select.CurrentValue != "b" {
		t.Fatalf("session/resume: %+v, %v; want the model b", resumed, err)
	}
	if _, out := third.prompt(t.Context(), string(sid), "hi"); joinText(out) != "from b again" {
		t.Errorf("after resume the turn ran on %q, want model b", joinText(out))
	}
}

// A session stored with a model that is no longer configured continues
// with the default one.
func TestAgent_RestoredModelNoLongerConfigured(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	st, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	cwd := t.TempDir()
	if err := st.Create(t.Context(), store.Record{ID: "sess_gone", Key: "acp:sess_gone", Cwd: cwd, Created: now, Updated: now, Model: "retired"}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	h := startStoreAgent(t, path, &scriptProvider{}, &scriptProvider{})
	res, err := h.conn.ResumeSession(t.Context(), acpsdk.ResumeSessionRequest{SessionId: "sess_gone", Cwd: cwd})
	if err != nil || len(res.ConfigOptions) != 2 || res.ConfigOptions[1].Select.CurrentValue != "a" {
		t.Errorf("resume: %+v, %v; want the default model a", res, err)
	}
}

// A direct /call after session/load in a new agent gets an ID distinct from
// the replayed calls, and the history holds distinct IDs.
func TestAgent_ToolCallIDsUniqueAcrossLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	open := func() (*harness, *sqlite.Store) {
		st, err := sqlite.Open(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return startAgentWith(t, testOptions{Store: st}), st
	}
	mem := []acpsdk.McpServer{acpclient.Stdio("mem", "unused", nil, nil)}
	first, _ := open()
	cwd := t.TempDir()
	sid := first.newSessionIn(cwd, mem...)
	if _, out := first.prompt(t.Context(), sid, `/call mcp__mem__echo {"message":"one"}`); lastToolUpdate(out) == nil {
		t.Fatal("no tool call in the first turn")
	}
	first.agent.Shutdown()

	second, st := open()
	from := len(second.client.Updates())
	if _, err := second.conn.LoadSession(t.Context(), acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(sid), Cwd: cwd, McpServers: mem}); err != nil {
		t.Fatal(err)
	}
	replayed := map[acpsdk.ToolCallId]bool{}
	for _, n := range second.client.Updates()[from:] {
		if n.Update.ToolCall != nil {
			replayed[n.Update.ToolCall.ToolCallId] = true
		}
	}
	if len(replayed) != 1 {
		t.Fatalf("replayed tool calls: %v", replayed)
	}
	_, out := second.prompt(t.Context(), sid, `/call mcp__mem__echo {"message":"two"}`)
	u := lastToolUpdate(out)
	if u == nil || replayed[u.ToolCallId] {
		t.Errorf("the new call reuses a replayed ID: %+v", u)
	}
	second.agent.Shutdown() // the turn's commit is written behind the response
	turns, err := st.Turns(t.Context(), sid)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, turn := range turns {
		for _, m := range turn.Messages {
			for _, c := range m.ToolCalls {
				if ids[c.ID] {
					t.Errorf("the history holds two calls with ID %q", c.ID)
				}
				ids[c.ID] = true
			}
		}
	}
	if len(ids) != 2 {
		t.Errorf("history call IDs = %v, want 2", ids)
	}
}

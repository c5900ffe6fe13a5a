package acp

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
)

// updatesUntil reads the agent's lines until the response with id and
// returns the session/update updates written before it, as JSON objects.
func (c *rawClient) updatesUntil(id string) []map[string]any {
	c.t.Helper()
	var out []map[string]any
	deadline := time.After(30 * time.Second)
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				c.t.Fatalf("the agent closed stdout before answering id %s", id)
			}
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params struct {
					Update map[string]any `json:"update"`
				} `json:"params"`
				Error json.RawMessage `json:"error"`
			}
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				c.t.Fatalf("agent wrote a line that is not JSON: %q", line)
			}
			switch {
			case m.Method == "session/update":
				out = append(out, m.Params.Update)
			case m.Method == "" && string(m.ID) == id:
				if m.Error != nil {
					c.t.Fatalf("id %s: %s", id, m.Error)
				}
				return out
			}
		case <-deadline:
			c.t.Fatalf("no response to id %s", id)
		}
	}
}

// compactionSession runs a session of two prompts, "hello" and /compact,
// on a model that answers and then writes the summary in pieces, for a
// client whose initialize advertises caps; it returns the updates of the
// /compact turn.
func compactionSession(t *testing.T, caps string) []map[string]any {
	p := &scriptProvider{responses: []gateway.Response{say("hello back"), say("The user greeted the agent.")}}
	gw := runner.NewLocal(&runner.Options{Models: []gateway.Model{{ID: "script:1", Label: "Script", Provider: p, ContextWindow: 100_000}}})
	c := serveRaw(t, &testOptions{Gateway: gw})
	send := func(line string, args ...any) {
		if _, err := fmt.Fprintf(c.w, line+"\n", args...); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":%s}}`, caps)
	c.updatesUntil("1")
	send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":%q,"mcpServers":[]}}`, t.TempDir())
	var created struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(c.response("2")["result"], &created); err != nil || created.SessionID == "" {
		t.Fatalf("session/new: %v", err)
	}
	send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"hello"}]}}`, created.SessionID)
	c.updatesUntil("3")
	send(`{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"/compact"}]}}`, created.SessionID)
	return c.updatesUntil("4")
}

// agentText is the text of the agent_message_chunk updates of us, joined.
func agentText(us []map[string]any) string {
	var b strings.Builder
	for _, u := range us {
		if u["sessionUpdate"] == "agent_message_chunk" {
			text, _ := u["content"].(map[string]any)["text"].(string)
			b.WriteString(text)
		}
	}
	return b.String()
}

// TestAgent_CompactionUpdates: to a client that advertised
// session.compaction, /compact is a compaction_update in_progress, the
// summary in compaction_summary_chunk updates as the model streams it, and
// a compaction_update completed with the whole summary, all under one
// compactionId; the agent message of a compaction is not sent. A client
// without the capability gets that agent message and no compaction
// update. Both get /compact's answer.
func TestAgent_CompactionUpdates(t *testing.T) {
	t.Run("session.compaction", func(t *testing.T) {
		us := compactionSession(t, `{"session":{"compaction":{}}}`)
		var kinds []string
		var id any
		var chunks strings.Builder
		var completed map[string]any
		for _, u := range us {
			kind, _ := u["sessionUpdate"].(string)
			switch kind {
			case "compaction_update":
				kinds = append(kinds, kind+":"+fmt.Sprint(u["status"]))
				if u["status"] == "completed" {
					completed = u
				}
			case "compaction_summary_chunk":
				if len(kinds) == 0 || kinds[len(kinds)-1] != kind {
					kinds = append(kinds, kind)
				}
				content, _ := u["content"].(map[string]any)
				if content["type"] != "text" {
					t.Errorf("summary chunk %v: want a text block", u)
				}
				text, _ := content["text"].(string)
				chunks.WriteString(text)
			default:
				continue
			}
			if id == nil {
				id = u["compactionId"]
			}
			if s, _ := u["compactionId"].(string); s == "" || u["compactionId"] != id {
				t.Errorf("update %v: want compactionId %v", u, id)
			}
		}
		if got := strings.Join(kinds, " "); got != "compaction_update:in_progress compaction_summary_chunk compaction_update:completed" {
			t.Fatalf("compaction updates: %s\n%v", got, us)
		}
		if chunks.String() != "The user greeted the agent." {
			t.Errorf("summary chunks %q", chunks.String())
		}
		if b, _ := json.Marshal(completed["summary"]); string(b) != `[{"text":"The user greeted the agent.","type":"text"}]` || completed["error"] != nil {
			t.Errorf("completed update %v: want the whole summary, no error", completed)
		}
		if text := agentText(us); strings.Contains(text, "[Compacted") || !strings.HasPrefix(text, "Compacted the conversation: ") {
			t.Errorf("agent text %q: want /compact's answer only", text)
		}
	})
	t.Run("without the capability", func(t *testing.T) {
		us := compactionSession(t, `{}`)
		for _, u := range us {
			if k, _ := u["sessionUpdate"].(string); strings.HasPrefix(k, "compaction") {
				t.Errorf("%s to a client without session.compaction: %v", k, u)
			}
		}
		if text := agentText(us); !strings.HasPrefix(text, "\n[Compacted the conversation because you asked (/compact)") || !strings.Contains(text, "Compacted the conversation: ") {
			t.Errorf("agent text %q: want the compaction's message, then /compact's answer", text)
		}
	})
}

// A failed or cancelled compaction's update says so, with why for a
// failure, and clears what was streamed of its summary (summary null).
func TestCompactionUpdates_Ends(t *testing.T) {
	for _, c := range []struct {
		rep  gateway.CompactionReport
		want string
	}{
		{gateway.CompactionReport{ID: "c1", Status: gateway.CompactionInProgress, Before: 9}, `{"sessionUpdate":"compaction_update","compactionId":"c1","status":"in_progress"}`},
		{gateway.CompactionReport{ID: "c1", Status: gateway.CompactionInProgress, Delta: "Sum"}, `{"sessionUpdate":"compaction_summary_chunk","compactionId":"c1","content":{"text":"Sum","type":"text"}}`},
		{gateway.CompactionReport{ID: "c1", Status: gateway.CompactionCompleted, Summary: "Summary."}, `{"sessionUpdate":"compaction_update","compactionId":"c1","status":"completed","summary":[{"text":"Summary.","type":"text"}]}`},
		{gateway.CompactionReport{ID: "c1", Status: gateway.CompactionFailed, Err: "fake: HTTP 500 (try again later)"}, `{"sessionUpdate":"compaction_update","compactionId":"c1","status":"failed","summary":null,"error":"fake: HTTP 500 (try again later)"}`},
		{gateway.CompactionReport{ID: "c1", Status: gateway.CompactionCancelled}, `{"sessionUpdate":"compaction_update","compactionId":"c1","status":"cancelled","summary":null}`},
	} {
		us := compactionUpdates(&c.rep)
		if len(us) != 1 {
			t.Fatalf("%+v: %d updates", c.rep, len(us))
		}
		if got := marshal(t, us[0]); got != c.want {
			t.Errorf("%+v:\n got %s\nwant %s", c.rep, got, c.want)
		}
	}
}

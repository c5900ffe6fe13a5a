package mcpserver_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/mcpserver"
)

// TestIdleConversationEndedAndReopened: a conversation unused for the idle
// timeout is ended (its session leaves the core, its servers closed) and
// the next call with its key reopens it from the store.
func TestIdleConversationEndedAndReopened(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, setup{idle: time.Minute})
		cs := e.connect(nil)
		key := ask(t, cs, "/tools", "").ok(t).out.SessionKey
		if e.core.Lookup(key) == nil {
			t.Fatal("the conversation is not live after its call")
		}
		time.Sleep(50 * time.Second)
		synctest.Wait()
		if e.core.Lookup(key) == nil {
			t.Fatal("the conversation was ended before its idle timeout")
		}
		r := ask(t, cs, "/servers", key).ok(t) // a use restarts the idle clock
		time.Sleep(50 * time.Second)
		synctest.Wait()
		if e.core.Lookup(key) == nil {
			t.Fatal("the conversation was ended 50s after its last use")
		}
		time.Sleep(30 * time.Second) // past the timeout, and a sweep
		synctest.Wait()
		if e.core.Lookup(key) != nil {
			t.Fatal("the idle conversation is still live")
		}
		r = ask(t, cs, "/servers", key).ok(t)
		if r.out.SessionKey != key || !strings.Contains(r.text, "kit: connected") || e.core.Lookup(key) == nil {
			t.Errorf("after the idle end: %+v %q; want the conversation reopened with its servers", r.out, r.text)
		}
	})
}

// TestShutdownEndsConversations: the shutdown func ends every live
// conversation, and later calls are refused.
func TestShutdownEndsConversations(t *testing.T) {
	e := start(t, setup{})
	cs := e.connect(nil)
	key := ask(t, cs, "/tools", "").ok(t).out.SessionKey
	e.shutdown()
	if e.core.Lookup(key) != nil {
		t.Error("the conversation is still live after shutdown")
	}
	if r := ask(t, cs, "/tools", key); !r.IsError || !strings.Contains(r.text, "shutting down") {
		t.Errorf("a call after shutdown: %v %q; want an error saying the server is shutting down", r.IsError, r.text)
	}
}

// TestPermission_UnansweredQuestionExpires: a turn waiting for the retried
// call that answers its permission question (multi round-trip) is cancelled
// once it has waited the idle timeout; the tool never runs, and the
// requestState is refused afterwards.
func TestPermission_UnansweredQuestionExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, setup{ask: true, idle: time.Minute})
		cs := e.connect(&mcp.ClientOptions{
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"allow": true}}, nil
			},
			MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}, // the test retries, or not
		})
		params := &mcp.CallToolParams{Name: mcpserver.ToolName, Arguments: map[string]any{"message": "/call mcp__kit__touch {}"}}
		res, err := cs.CallTool(t.Context(), params)
		if err != nil {
			t.Fatal(err)
		}
		if !res.NeedsInput() || len(res.InputRequests) != 1 || res.RequestState == "" {
			t.Fatalf("result %+v: want an input request", res)
		}
		for _, ir := range res.InputRequests {
			if p, ok := ir.(*mcp.ElicitParams); !ok || !strings.Contains(p.Message, "mcp__kit__touch") {
				t.Fatalf("input request %#v: want an elicitation naming mcp__kit__touch", ir)
			}
		}
		time.Sleep(30 * time.Second)
		synctest.Wait()
		keys := e.liveKeys(t)
		if len(keys) != 1 || e.core.Lookup(keys[0]) == nil {
			t.Fatalf("conversations %v: want one, live while its turn waits", keys)
		}
		time.Sleep(3 * time.Minute) // the question expires, then the conversation idles out
		synctest.Wait()
		if e.core.Lookup(keys[0]) != nil {
			t.Error("the conversation is still live after its question expired")
		}
		retry := *params
		retry.RequestState = res.RequestState
		retry.InputResponses = mcp.InputResponseMap{}
		for id := range res.InputRequests {
			retry.InputResponses[id] = &mcp.ElicitResult{Action: "accept", Content: map[string]any{"allow": true}}
		}
		res, err = cs.CallTool(t.Context(), &retry)
		if err != nil {
			t.Fatal(err)
		}
		if !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "no turn is waiting for it") {
			t.Errorf("late answer: %+v; want an error saying no turn waits", res)
		}
		if n := e.kit.touched.Load(); n != 0 {
			t.Errorf("the tool ran %d times after its question expired", n)
		}
	})
}

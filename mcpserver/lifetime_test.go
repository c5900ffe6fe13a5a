package mcpserver_test

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"
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

package connect

import (
	"encoding/json"
	"fmt"
)

// The ids a Proxy makes start with its prefix, idPrefix and a random
// nonce of its own ("acp-agent-connect-<nonce>-"), which no editor's id is
// expected to, and no other Proxy's (one may be the editor of another):
// its own requests ("<prefix><n>"), its Mux's ("<prefix>mcp-<n>"), the
// local entries' ("<prefix>server-<n>"), their connections'
// ("<prefix>conn-<n>") and the gateway requests' ids it had to change
// ("<prefix>req-<n>").
const idPrefix = "acp-agent-connect-"

// editorCall is a request of the editor sent to the gateway and not
// answered yet.
type editorCall struct {
	id        json.RawMessage // as the editor sent it (and the gateway got it)
	method    string
	sessionID string   // params.sessionId, "" when absent
	open      *opening // session/new, load, resume, fork: what success records
}

// gatewayCall is a request of the gateway sent to the editor and not
// answered yet. Its id at the editor is the gateway's, unless an earlier
// Link's request of the same id still waits there (Links number their
// requests from the same start): then the editor sees a proxy id, and the
// response gets the gateway's back.
type gatewayCall struct {
	gen      uint64          // the Link it came on; a response on a later one is dropped
	id       json.RawMessage // the gateway's id
	editorID json.RawMessage // the id the editor got
}

// ownCall is a request of the proxy itself on a Link: initialize and the
// session/resume or session/load that re-attach a session after a drop.
type ownCall struct {
	done chan message // receives the response (buffered)
	// drop is the session whose session/update notifications are dropped
	// until the response (a session/load's replay), "" for none.
	drop string
}

// callTable holds the calls in flight in both directions. The Proxy's mu
// guards it.
type callTable struct {
	// editor are the editor's requests sent on the current Link, by idKey
	// of their id; a drop answers and empties them.
	editor map[string]*editorCall
	// gateway are the gateway's requests waiting at the editor, by idKey
	// of the id the editor got, those of earlier Links included until the
	// editor answers them (its answer is then dropped).
	gateway map[string]*gatewayCall
	// own are the proxy's own requests, by idKey.
	own map[string]*ownCall
	// changed is closed and replaced whenever an editor call is removed.
	changed chan struct{}
	// nextOwn and nextMapped count the ids made for own requests and for
	// the gateway requests whose id had to change.
	nextOwn, nextMapped int
}

func newCallTable() callTable {
	return callTable{
		editor: make(map[string]*editorCall), gateway: make(map[string]*gatewayCall),
		own: make(map[string]*ownCall), changed: make(chan struct{}),
	}
}

// answered removes the editor call of key and returns it (nil if none).
func (t *callTable) answered(key string) *editorCall {
	c := t.editor[key]
	if c != nil {
		delete(t.editor, key)
		t.signal()
	}
	return c
}

// signal wakes those waiting for the editor calls to change.
func (t *callTable) signal() {
	close(t.changed)
	t.changed = make(chan struct{})
}

// takeEditor removes and returns every editor call.
func (t *callTable) takeEditor() []*editorCall {
	out := make([]*editorCall, 0, len(t.editor))
	for _, c := range t.editor {
		out = append(out, c)
	}
	clear(t.editor)
	t.signal()
	return out
}

// gatewayRequest records a request of the gateway on Link gen and returns
// the id the editor must see: the gateway's, or a proxy id (under prefix)
// when an earlier request of that id still waits at the editor.
func (t *callTable) gatewayRequest(gen uint64, id json.RawMessage, prefix string) json.RawMessage {
	editorID := id
	if _, taken := t.gateway[idKey(id)]; taken {
		t.nextMapped++
		editorID, _ = json.Marshal(fmt.Sprintf("%sreq-%d", prefix, t.nextMapped))
	}
	t.gateway[idKey(editorID)] = &gatewayCall{gen: gen, id: id, editorID: editorID}
	return editorID
}

// gatewayByID returns the call of Link gen whose gateway id is id.
func (t *callTable) gatewayByID(gen uint64, id json.RawMessage) *gatewayCall {
	key := idKey(id)
	for _, c := range t.gateway {
		if c.gen == gen && idKey(c.id) == key {
			return c
		}
	}
	return nil
}

// newOwn registers an own request and returns its id, under prefix.
func (t *callTable) newOwn(c *ownCall, prefix string) json.RawMessage {
	t.nextOwn++
	id, _ := json.Marshal(fmt.Sprintf("%s%d", prefix, t.nextOwn))
	t.own[idKey(id)] = c
	return id
}

package connect

import (
	"encoding/json"
	"fmt"
	"slices"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/acp"
	"github.com/seed02d3eb6b/acp-agent/bridge"
)

// The methods whose params carry mcpServers, rewritten by the proxy.
var opensSession = map[string]bool{
	acpsdk.AgentMethodSessionNew:    true,
	acpsdk.AgentMethodSessionLoad:   true,
	acpsdk.AgentMethodSessionResume: true,
	acpsdk.AgentMethodSessionFork:   true,
}

// localEntry is a stdio mcpServers entry of the editor that the proxy runs
// itself: the gateway sees {"type":"acp","name":…,"id":id} in its place and
// asks for it with mcp/connect {acpId: id} (local.go).
type localEntry struct {
	id   string            // the acp entry's id
	spec bridge.ServerSpec // the editor's entry, parsed and valid
	cwd  string            // the session's cwd, the child's working directory
}

// sessionRecord is a session the editor opened: what re-attaching it sends
// (session/resume or session/load) and the local servers it owns.
type sessionRecord struct {
	cwd     string
	dirs    json.RawMessage // additionalDirectories as the editor sent them; nil when absent
	servers json.RawMessage // mcpServers as the gateway got them (stdio entries rewritten)
	entries []string        // the ids of its localEntries
}

// opening is a session/new, load, resume or fork on its way: the record
// its success makes.
type opening struct {
	method    string
	sessionID string // params.sessionId: the session (load, resume) or the source (fork)
	rec       sessionRecord
}

// sessionTable holds the editor's open sessions and the local entries of
// every session (open or opening). The Proxy's mu guards it.
type sessionTable struct {
	// open are the sessions to re-attach after a drop, by sessionId.
	open map[string]*sessionRecord
	// entries are every local entry handed to the gateway and not
	// forgotten, by id: those of open sessions and of opening ones.
	entries map[string]*localEntry
	// prefix starts the entries' ids (the Proxy's); next counts them.
	prefix string
	next   int
}

func newSessionTable(prefix string) sessionTable {
	return sessionTable{open: make(map[string]*sessionRecord), entries: make(map[string]*localEntry), prefix: prefix}
}

// rewrite replaces, in the params of an opening method, every well-formed
// stdio mcpServers entry by an acp entry of a fresh id (its _meta kept),
// and registers each as a localEntry of the params' cwd. It returns the
// params to send (params itself when nothing changed) and the opening to
// record. An entry that is not a valid stdio entry (http, sse, the
// editor's own acp entries, or a broken entry the gateway will refuse,
// naming it) is left as it is.
func (t *sessionTable) rewrite(method string, params json.RawMessage) (json.RawMessage, *opening) {
	op := &opening{method: method, sessionID: param(params, "sessionId")}
	var obj map[string]json.RawMessage
	if json.Unmarshal(params, &obj) != nil {
		return params, op
	}
	_ = json.Unmarshal(obj["cwd"], &op.rec.cwd)
	op.rec.dirs = obj["additionalDirectories"]
	op.rec.servers = obj["mcpServers"]
	var entries []json.RawMessage
	if json.Unmarshal(obj["mcpServers"], &entries) != nil {
		return params, op
	}
	changed := false
	for i, e := range entries {
		specs, err := acp.ParseMCPServers(json.RawMessage("[" + string(e) + "]"))
		if err != nil || len(specs) != 1 || specs[0].Transport != bridge.TransportStdio {
			continue
		}
		t.next++
		id := fmt.Sprintf("%sserver-%d", t.prefix, t.next)
		t.entries[id] = &localEntry{id: id, spec: specs[0], cwd: op.rec.cwd}
		op.rec.entries = append(op.rec.entries, id)
		acpEntry := map[string]json.RawMessage{}
		acpEntry["type"], _ = json.Marshal("acp")
		acpEntry["name"], _ = json.Marshal(specs[0].Name)
		acpEntry["id"], _ = json.Marshal(id)
		if meta := member(e, "_meta"); meta != nil {
			acpEntry["_meta"] = meta
		}
		entries[i], _ = json.Marshal(acpEntry)
		changed = true
	}
	if !changed {
		return params, op
	}
	obj["mcpServers"], _ = json.Marshal(entries)
	op.rec.servers = obj["mcpServers"]
	out, err := json.Marshal(obj)
	if err != nil {
		return params, op
	}
	return out, op
}

// opened records the session op opened (sid: the response's sessionId
// for session/new and session/fork, the params' for load and resume),
// replacing what an earlier open of it recorded; it returns the entries
// the record replaced, whose local servers end.
func (t *sessionTable) opened(sid string, op *opening) (dropped []string) {
	if sid == "" {
		t.failed(op)
		return nil
	}
	if old := t.open[sid]; old != nil {
		dropped = t.forgetEntries(old.entries, op.rec.entries)
	}
	rec := op.rec
	t.open[sid] = &rec
	return dropped
}

// failed forgets the entries of an opening that failed.
func (t *sessionTable) failed(op *opening) {
	t.forgetEntries(op.rec.entries, nil)
}

// closed forgets session sid (session/close or session/delete answered,
// or the gateway connection's end closed it) and returns its entries.
func (t *sessionTable) closed(sid string) []string {
	rec := t.open[sid]
	if rec == nil {
		return nil
	}
	delete(t.open, sid)
	return t.forgetEntries(rec.entries, nil)
}

// forgetEntries forgets the entries ids but those in keep and returns
// them.
func (t *sessionTable) forgetEntries(ids, keep []string) []string {
	var out []string
	for _, id := range ids {
		if !slices.Contains(keep, id) {
			delete(t.entries, id)
			out = append(out, id)
		}
	}
	return out
}

// ids returns the open sessions' ids, sorted.
func (t *sessionTable) ids() []string {
	out := make([]string, 0, len(t.open))
	for sid := range t.open {
		out = append(out, sid)
	}
	slices.Sort(out)
	return out
}

// reattachParams are the params of the session/resume or session/load that
// re-attaches a session on a new connection.
type reattachParams struct {
	SessionID string          `json:"sessionId"`
	Cwd       string          `json:"cwd"`
	Dirs      json.RawMessage `json:"additionalDirectories,omitempty"`
	Servers   json.RawMessage `json:"mcpServers"`
}

// reattach returns the params that re-attach session sid, recorded as rec.
func (rec *sessionRecord) reattach(sid string) reattachParams {
	servers := rec.servers
	if len(servers) == 0 {
		servers = json.RawMessage("[]")
	}
	return reattachParams{SessionID: sid, Cwd: rec.cwd, Dirs: rec.dirs, Servers: servers}
}

package connect

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/sandbox/environ"
)

func TestSessionTable_Rewrite(t *testing.T) {
	for _, tc := range []struct {
		name, servers string
		// want is the mcpServers the gateway gets, with ID for the fresh id.
		want  string
		local []bridge.ServerSpec
	}{
		{"stdio without type", `[{"name":"fs","command":"/bin/fs","args":["-v"],"env":[{"name":"K","value":"v"}]}]`,
			`[{"id":"ID1","name":"fs","type":"acp"}]`,
			[]bridge.ServerSpec{{Name: "fs", Transport: bridge.TransportStdio, Command: "/bin/fs", Args: []string{"-v"}, Env: []environ.Var{{Name: "K", Value: "v"}}}}},
		{"stdio typed, without args and env, _meta kept", `[{"type":"stdio","name":"fs","command":"fs","_meta":{"acp-agent/timeouts":{"toolCall":5}}}]`,
			`[{"_meta":{"acp-agent/timeouts":{"toolCall":5}},"id":"ID1","name":"fs","type":"acp"}]`,
			[]bridge.ServerSpec{{Name: "fs", Transport: bridge.TransportStdio, Command: "fs"}}},
		{"http, sse and the editor's acp entries pass", `[{"type":"http","name":"w","url":"https://x/mcp","headers":[]},{"type":"sse","name":"s","url":"https://x/sse","headers":[]},{"type":"acp","name":"h","id":"srv-1"}]`,
			`[{"type":"http","name":"w","url":"https://x/mcp","headers":[]},{"type":"sse","name":"s","url":"https://x/sse","headers":[]},{"type":"acp","name":"h","id":"srv-1"}]`, nil},
		{"a broken entry is the gateway's to refuse", `[{"name":"x","command":""},{"name":"y","command":"y","env":[{"name":"A=B","value":""}]}]`,
			`[{"name":"x","command":""},{"name":"y","command":"y","env":[{"name":"A=B","value":""}]}]`, nil},
		{"mixed", `[{"type":"http","name":"w","url":"https://x/mcp","headers":[]},{"name":"a","command":"a"},{"name":"b","command":"b"}]`,
			`[{"type":"http","name":"w","url":"https://x/mcp","headers":[]},{"id":"ID1","name":"a","type":"acp"},{"id":"ID2","name":"b","type":"acp"}]`,
			[]bridge.ServerSpec{{Name: "a", Transport: bridge.TransportStdio, Command: "a"}, {Name: "b", Transport: bridge.TransportStdio, Command: "b"}}},
		{"not an array", `{"name":"a"}`, `{"name":"a"}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newSessionTable(idPrefix + "nonce-")
			params := `{"cwd":"/work","sessionId":"s","mcpServers":` + tc.servers + `}`
			out, op := st.rewrite("session/load", json.RawMessage(params))
			want := strings.NewReplacer("ID1", idPrefix+"nonce-server-1", "ID2", idPrefix+"nonce-server-2").Replace(tc.want)
			if got := string(member(out, "mcpServers")); !jsonSame(got, want) {
				t.Errorf("mcpServers = %s, want %s", got, want)
			}
			if len(tc.local) == 0 && string(out) != params {
				t.Errorf("params changed with nothing to rewrite: %s", out)
			}
			if op.sessionID != "s" || op.rec.cwd != "/work" || !jsonSame(string(op.rec.servers), want) {
				t.Errorf("opening = %+v, want session s in /work with the rewritten servers", op)
			}
			if len(op.rec.entries) != len(tc.local) || len(st.entries) != len(tc.local) {
				t.Fatalf("entries %v (table %d), want %d", op.rec.entries, len(st.entries), len(tc.local))
			}
			for i, id := range op.rec.entries {
				e := st.entries[id]
				spec := e.spec
				spec.ServerID, spec.ServerIDKey = "", ""
				if e.cwd != "/work" || !specSame(spec, tc.local[i]) {
					t.Errorf("entry %s = %+v in %q, want %+v in /work", id, e.spec, e.cwd, tc.local[i])
				}
			}

			// A failed open forgets its entries; a successful one keeps them
			// until the session closes.
			if st.opened("", op); len(st.entries) != 0 {
				t.Errorf("entries after a failed open: %v", st.entries)
			}
		})
	}
}

func TestSessionTable_OpenedAndClosed(t *testing.T) {
	st := newSessionTable(idPrefix + "n-")
	_, op := st.rewrite("session/new", json.RawMessage(`{"cwd":"/a","mcpServers":[{"name":"a","command":"a"}]}`))
	if dropped := st.opened("s1", op); len(dropped) != 0 || st.open["s1"] == nil || len(st.entries) != 1 {
		t.Fatalf("opened: dropped %v, open %v, entries %v", dropped, st.open, st.entries)
	}
	first := op.rec.entries[0]
	// session/load of the open session with new servers replaces the record.
	_, op = st.rewrite("session/load", json.RawMessage(`{"sessionId":"s1","cwd":"/a","mcpServers":[{"name":"b","command":"b"}]}`))
	if dropped := st.opened("s1", op); len(dropped) != 1 || dropped[0] != first || len(st.entries) != 1 {
		t.Errorf("reload: dropped %v, entries %v; want the first entry dropped", dropped, st.entries)
	}
	p := st.open["s1"].reattach("s1")
	if b, _ := json.Marshal(p); !strings.Contains(string(b), `"name":"b"`) || !strings.Contains(string(b), `"cwd":"/a"`) || strings.Contains(string(b), "additionalDirectories") {
		t.Errorf("reattach params = %s", b)
	}
	if closed := st.closed("s1"); len(closed) != 1 || len(st.entries) != 0 || len(st.open) != 0 {
		t.Errorf("closed: %v, entries %v, open %v", closed, st.entries, st.open)
	}
}

// FuzzSessionTable_Rewrite: whatever the editor sends as params, rewrite
// does not panic, keeps a JSON object a JSON object with as many
// mcpServers, and registers exactly the entries it names.
func FuzzSessionTable_Rewrite(f *testing.F) {
	for _, s := range []string{
		`{"cwd":"/w","mcpServers":[{"name":"a","command":"a","args":[],"env":[]}]}`,
		`{"cwd":"/w","mcpServers":[{"type":"stdio","name":"a","command":"a"},{"type":"http","name":"b","url":"https://b"}]}`,
		`{"mcpServers":null}`, `[]`, `{"mcpServers":[1,"x",null,{}]}`, `{"mcpServers":[{"name":"\u200b","command":"a"}]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, params string) {
		st := newSessionTable(idPrefix + "f-")
		out, op := st.rewrite("session/new", json.RawMessage(params))
		if len(op.rec.entries) != len(st.entries) {
			t.Fatalf("%d entries registered, %d named", len(st.entries), len(op.rec.entries))
		}
		if len(op.rec.entries) == 0 {
			if string(out) != params {
				t.Fatalf("params changed with nothing rewritten: %s -> %s", params, out)
			}
			return
		}
		var before, after struct{ MCPServers []json.RawMessage }
		if json.Unmarshal([]byte(params), &before) != nil || json.Unmarshal(out, &after) != nil || len(before.MCPServers) != len(after.MCPServers) {
			t.Fatalf("rewrite %s -> %s", params, out)
		}
	})
}

func jsonSame(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return a == b
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}

// specSame compares what a stdio entry says: name, command, args, env.
func specSame(a, b bridge.ServerSpec) bool {
	return a.Name == b.Name && a.Transport == b.Transport && a.Command == b.Command &&
		slices.Equal(a.Args, b.Args) && slices.Equal(a.Env, b.Env)
}

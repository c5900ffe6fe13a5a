package acp

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
)

func TestRawMCPServersReader(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`,
		`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[{"name":"fs","command":"node"}],"_meta":{"keep":1,"acp-agent/rawMcpServers":"forged"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"session/new","params":{"cwd":"/tmp"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"\"session/new\""}]}}`,
		`not json at all "session/new"`,
		``,
	}, "\n")
	out, _ := readFramed(t, in)
	lines := strings.Split(out, "\n")
	inLines := strings.Split(in, "\n")
	for _, i := range []int{0, 3} {
		if lines[i] != inLines[i] {
			t.Errorf("line %d changed:\n got %s\nwant %s", i, lines[i], inLines[i])
		}
	}

	var msg struct {
		Params struct {
			MCPServers json.RawMessage `json:"mcpServers"`
			Meta       map[string]any  `json:"_meta"`
		} `json:"params"`
	}
	if err := json.Unmarshal([]byte(lines[1]), &msg); err != nil {
		t.Fatal(err)
	}
	if string(msg.Params.MCPServers) != "[]" {
		t.Errorf("mcpServers = %s, want []", msg.Params.MCPServers)
	}
	raw, err := rawMCPServers(msg.Params.Meta)
	if err != nil || string(raw) != `[{"command":"node","name":"fs"}]` {
		t.Errorf("raw mcpServers = %s, %v", raw, err)
	}
	if msg.Params.Meta["keep"] != float64(1) {
		t.Errorf("client _meta lost: %v", msg.Params.Meta)
	}

	msg.Params.Meta, msg.Params.MCPServers = nil, nil
	if err := json.Unmarshal([]byte(lines[2]), &msg); err != nil {
		t.Fatal(err)
	}
	if _, ok := msg.Params.Meta[metaRawMCPServers]; ok || msg.Params.MCPServers != nil {
		t.Errorf("session/new without mcpServers rewritten: %s", lines[2])
	}
}

func TestRawMCPServersReader_SmallReads(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}` + "\n" + `{"jsonrpc":"2.0","id":3,"result":{}}`
	r := newFraming(strings.NewReader(in), started(), &frameSink{}, nil, 0)
	defer r.close()
	var out []byte
	buf := make([]byte, 3)
	for {
		n, err := r.Read(buf)
		out = append(out, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if !strings.HasSuffix(string(out), "\n"+`{"jsonrpc":"2.0","id":3,"result":{}}`+"\n") || !strings.Contains(string(out), metaRawMCPServers) {
		t.Errorf("out = %s", out)
	}
}

func started() <-chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}

package acp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
)

// metaRawMCPServers is the _meta key under which rawMCPServersReader hands the
// client's mcpServers JSON to the Agent.
const metaRawMCPServers = "acp-agent/rawMcpServers"

// maxRewriteLine is the longest request line rawMCPServersReader rewrites;
// longer lines pass through untouched (acp-go-sdk refuses lines over 10 MiB).
const maxRewriteLine = 16 << 20

// rawMCPServersReader sits between stdin and acp-go-sdk. For each
// session/new, session/load and session/resume request it moves
// params.mcpServers into params._meta[metaRawMCPServers] and leaves an empty
// list in its place, so the SDK's decoder (which mis-decodes some stdio
// entries) never sees the entries, and the Agent parses the client's own JSON
// with ParseMCPServers. A client-sent value under that _meta key is dropped.
// Every other line passes through byte for byte.
//
// Reads block until start is closed: acp-go-sdk starts reading in
// NewAgentSideConnection, before its logger can be set without a data race.
type rawMCPServersReader struct {
	in    *bufio.Reader
	start <-chan struct{}
	buf   []byte // rewritten output not yet read
}

func newRawMCPServersReader(r io.Reader, start <-chan struct{}) *rawMCPServersReader {
	return &rawMCPServersReader{in: bufio.NewReaderSize(r, 64<<10), start: start}
}

func (r *rawMCPServersReader) Read(p []byte) (int, error) {
	<-r.start
	for len(r.buf) == 0 {
		line, err := r.readLine()
		if len(line) > 0 {
			r.buf = rewriteSessionLine(line)
		}
		if err != nil {
			if len(r.buf) == 0 {
				return 0, err
			}
			break
		}
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// readLine returns the next line with its newline. A line longer than
// maxRewriteLine is returned in pieces, each too long to be rewritten.
func (r *rawMCPServersReader) readLine() ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.in.ReadSlice('\n')
		line = append(line, chunk...)
		if err != bufio.ErrBufferFull || len(line) > maxRewriteLine {
			return line, err
		}
	}
}

// rewriteSessionLine rewrites one JSON-RPC line as rawMCPServersReader
// describes, or returns it unchanged.
func rewriteSessionLine(line []byte) []byte {
	if len(line) > maxRewriteLine || !bytes.Contains(line, []byte(`"session/`)) {
		return line
	}
	var msg map[string]json.RawMessage
	if json.Unmarshal(line, &msg) != nil {
		return line
	}
	var method string
	if json.Unmarshal(msg["method"], &method) != nil {
		return line
	}
	switch method {
	case "session/new", "session/load", "session/resume":
	default:
		return line
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(msg["params"], &params) != nil || params == nil {
		return line
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := params["_meta"]; ok && string(raw) != "null" {
		if json.Unmarshal(raw, &meta) != nil || meta == nil {
			return line // not an object: let the SDK refuse it
		}
	}
	_, forged := meta[metaRawMCPServers]
	servers, ok := params["mcpServers"]
	hasServers := ok && string(servers) != "null"
	if !forged && !hasServers {
		return line
	}
	delete(meta, metaRawMCPServers)
	if hasServers {
		meta[metaRawMCPServers] = servers
		params["mcpServers"] = json.RawMessage("[]")
	}
	var err error
	if params["_meta"], err = json.Marshal(meta); err != nil {
		return line
	}
	if msg["params"], err = json.Marshal(params); err != nil {
		return line
	}
	out, err := json.Marshal(msg)
	if err != nil {
		return line
	}
	return append(out, '\n')
}

// rawMCPServers returns the client's mcpServers JSON stashed in meta by
// rawMCPServersReader, or nil.
func rawMCPServers(meta map[string]any) (json.RawMessage, error) {
	v, ok := meta[metaRawMCPServers]
	if !ok {
		return nil, nil
	}
	return json.Marshal(v)
}

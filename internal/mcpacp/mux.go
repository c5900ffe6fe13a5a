// Package mcpacp carries MCP inside an ACP connection: ACP's unstable
// MCP-over-ACP (https://agentclientprotocol.com/rfds/mcp-over-acp), in its
// two bindings.
//
// The published binding (npm @agentclientprotocol/sdk 2.4.0) is MCP
// 2026-07-28, stateless: each MCP request is one mcp/message request by
// serverId and requestId. [Caller] is the agent's go-sdk mcp.Connection for
// it, over a [CallFunc] that sends that request; [Published] tells its
// messages from the draft's.
//
// The acp-go-sdk v0.13 draft (mcp/connect, mcp/message by connectionId,
// mcp/disconnect) is served on both sides: the agent, whose MCP client
// talks to a server the editor hosts, and a client hosting servers (the
// test client).
//
// acp-go-sdk v0.13 has the proposal's types and sends mcp/connect and
// mcp/disconnect, but neither side of it sends or dispatches mcp/message.
// [Router] serves mcp/message and sends on the connection it is given; [Conn]
// is one MCP connection (a go-sdk mcp.Connection). The agent gives the
// Router its one connection, whose dispatch table serves mcp/message. A
// client built on acp-go-sdk's ClientSideConnection, which cannot dispatch
// mcp/message, runs a [Mux] beside it: a second acpsdk.Connection sharing
// the stream, handed the frames it owns ([Mux.Wants], [Mux.Deliver]), whose
// requests carry ids of their own ("mcpacp-<n>", or [MuxOptions.IDPrefix])
// so their responses can be told apart. The test client
// (internal/acpclient) runs one, and so does acp-agent connect
// (acp/connect), whose Mux shares the gateway connection with the
// editor's messages and serves the local servers it relays.
package mcpacp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"

	acpsdk "github.com/coder/acp-go-sdk"
)

// MethodMessage is the method of MCP-over-ACP that acp-go-sdk v0.13 does not
// dispatch, in both directions (acpsdk.AgentMethodMcpMessage and
// acpsdk.ClientMethodMcpMessage).
const MethodMessage = "mcp/message"

// DefaultIDPrefix marks the ids of a Mux's own requests on the shared
// stream unless MuxOptions.IDPrefix says otherwise.
const DefaultIDPrefix = "mcpacp-"

// MuxOptions configure a Mux; the zero value is valid.
type MuxOptions struct {
	// Logger receives the connection's diagnostics. Nil discards them.
	Logger *slog.Logger
	// IDPrefix starts the id of every request the Mux sends ("<prefix><n>",
	// a JSON string), by which Wants and Deliver tell its responses from
	// the main connection's. It must be a prefix no id of the main
	// connection starts with. Empty means DefaultIDPrefix.
	IDPrefix string
}

// Mux is a second acp-go-sdk Connection on a stream that a main connection
// (acpsdk.AgentSideConnection or ClientSideConnection) already speaks on. It
// handles the incoming requests and notifications of its methods, and sends
// requests whose responses come back to it. Its methods are safe for
// concurrent use; Deliver is meant for the one goroutine reading the
// stream.
type Mux struct {
	prefix  string // MuxOptions.IDPrefix
	conn    *acpsdk.Connection
	pw      *io.PipeWriter
	out     func([]byte) error
	methods map[string]bool
	log     *slog.Logger
	once    sync.Once
}

// NewMux returns a Mux serving methods with handler. out writes one whole
// frame (a JSON object and a newline) to the peer; it must be serialized
// with the main connection's writes (one frame per call keeps frames whole).
// opts may be nil (every default); it is copied. Close the Mux when the
// stream ends.
func NewMux(handler acpsdk.MethodHandler, methods []string, out func([]byte) error, opts *MuxOptions) *Mux {
	var o MuxOptions
	if opts != nil {
		o = *opts
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if o.IDPrefix == "" {
		o.IDPrefix = DefaultIDPrefix
	}
	pr, pw := io.Pipe()
	m := &Mux{prefix: o.IDPrefix, pw: pw, out: out, methods: make(map[string]bool, len(methods)), log: log}
	for _, name := range methods {
		m.methods[name] = true
	}
	start := make(chan struct{})
	m.conn = acpsdk.NewConnection(handler, writerFunc(m.write), &gated{r: pr, start: start})
	m.conn.SetLogger(log)
	close(start)
	return m
}

// Conn is the Mux's connection: send requests and notifications with
// acpsdk.SendRequest and SendNotification.
func (m *Mux) Conn() *acpsdk.Connection { return m.conn }

// Close ends the Mux's connection: requests waiting for a response fail and
// Conn().Done() is closed. It is idempotent.
func (m *Mux) Close() {
	m.once.Do(func() { _ = m.pw.Close() })
}

// Wants reports whether an incoming message belongs to the Mux: a request
// or notification (method not empty) of one of its methods, or a response
// (method empty) whose id is one of its requests' (a JSON string).
func (m *Mux) Wants(method string, id json.RawMessage) bool {
	if method != "" {
		return m.methods[method]
	}
	var s string
	return json.Unmarshal(id, &s) == nil && strings.HasPrefix(s, m.prefix)
}

// Deliver hands one incoming frame that Wants accepted to the Mux's
// connection (the id of a response restored to the SDK's). It waits until
// the connection has read it, and fails once the Mux is closed.
func (m *Mux) Deliver(frame []byte) error {
	frame = bytes.TrimSpace(frame)
	var msg map[string]json.RawMessage
	if err := json.Unmarshal(frame, &msg); err != nil {
		return fmt.Errorf("mcpacp: frame is not a JSON object: %w", err)
	}
	if _, isRequest := msg["method"]; !isRequest {
		var s string
		if json.Unmarshal(msg["id"], &s) == nil && strings.HasPrefix(s, m.prefix) {
			msg["id"] = json.RawMessage(strings.TrimPrefix(s, m.prefix))
			b, err := json.Marshal(msg)
			if err != nil {
				return err
			}
			frame = b
		}
	}
	_, err := m.pw.Write(append(frame, '\n'))
	return err
}

// Filter returns a reader of r's lines without those the Mux wants, which
// it delivers: for a main connection whose stream no framing layer reads
// first (the client side). A $/cancel_request goes to both. Lines over 10 MiB end the reader, as they end
// acp-go-sdk's.
func (m *Mux) Filter(r io.Reader) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			line, err := br.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				var head struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
				}
				ok := json.Unmarshal(line, &head) == nil
				if ok && head.Method == "$/cancel_request" && len(head.ID) == 0 {
					// The request it names may be the Mux's or the main
					// connection's: both get it, the other ignores it.
					if derr := m.Deliver(line); derr != nil {
						m.log.Debug("mcpacp: frame dropped", "err", derr)
					}
					if _, werr := pw.Write(line); werr != nil {
						return
					}
				} else if ok && m.Wants(head.Method, head.ID) {
					if derr := m.Deliver(line); derr != nil {
						m.log.Debug("mcpacp: frame dropped", "err", derr)
					}
				} else if _, werr := pw.Write(line); werr != nil {
					return
				}
			}
			if err != nil {
				m.Close()
				_ = pw.CloseWithError(err)
				return
			}
		}
	}()
	return pr
}

// write sends one frame of the Mux's connection: a request's numeric id
// becomes "<prefix><id>" so that its response is told apart from the main
// connection's.
func (m *Mux) write(p []byte) error {
	var msg map[string]json.RawMessage
	if err := json.Unmarshal(p, &msg); err != nil {
		return err
	}
	id, hasID := msg["id"]
	if _, hasMethod := msg["method"]; hasID && hasMethod {
		b, err := json.Marshal(m.prefix + string(id))
		if err != nil {
			return err
		}
		msg["id"] = b
		if p, err = json.Marshal(msg); err != nil {
			return err
		}
		p = append(p, '\n')
	}
	return m.out(p)
}

type writerFunc func([]byte) error

func (f writerFunc) Write(p []byte) (int, error) {
	if err := f(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// gated blocks reads until start is closed: acp-go-sdk starts reading in
// NewConnection, before SetLogger can be called without a data race.
type gated struct {
	r     io.Reader
	start <-chan struct{}
}

func (g *gated) Read(p []byte) (int, error) {
	<-g.start
	return g.r.Read(p)
}

// errClosed is returned by a closed Conn's Read and Write.
var errClosed = errors.New("mcpacp: connection closed")

package connect_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/acp"
	"github.com/seed02d3eb6b/acp-agent/acp/connect"
)

// fakeLink is a scripted gateway connection: the test reads what the
// proxy sends (next) and writes what the gateway says (say).
type fakeLink struct {
	t         *testing.T
	toProxy   chan []byte
	fromProxy chan []byte
	closed    chan struct{}
	once      sync.Once
	mu        sync.Mutex
	cause     error
}

func newFakeLink(t *testing.T) *fakeLink {
	return &fakeLink{t: t, toProxy: make(chan []byte), fromProxy: make(chan []byte, 64), closed: make(chan struct{})}
}

func (l *fakeLink) ReadMessage() ([]byte, error) {
	select {
	case m := <-l.toProxy:
		return m, nil
	case <-l.closed:
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.cause != nil {
			return nil, l.cause
		}
		return nil, io.EOF
	}
}

func (l *fakeLink) WriteMessage(line []byte) error {
	select {
	case l.fromProxy <- append([]byte(nil), line...):
		return nil
	case <-l.closed:
		return io.ErrClosedPipe
	}
}

func (l *fakeLink) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

// cut ends the connection with cause, as the network would.
func (l *fakeLink) cut(cause error) {
	l.mu.Lock()
	l.cause = cause
	l.mu.Unlock()
	_ = l.Close()
}

// say sends one message of the gateway.
func (l *fakeLink) say(msg string) {
	l.t.Helper()
	select {
	case l.toProxy <- []byte(msg):
	case <-l.closed:
		l.t.Fatalf("the link closed before the gateway said %s", msg)
	}
}

// next returns the next message the proxy sent.
func (l *fakeLink) next() rpc {
	l.t.Helper()
	select {
	case b := <-l.fromProxy:
		return decodeRPC(l.t, b)
	case <-l.t.Context().Done():
		l.t.Fatal("the test ended waiting for the proxy")
	}
	return rpc{}
}

// closedByProxy reports whether the proxy has closed the link.
func (l *fakeLink) closedByProxy() <-chan struct{} { return l.closed }

// rpc is one JSON-RPC message as a test reads it.
type rpc struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	raw string
}

func decodeRPC(t *testing.T, b []byte) rpc {
	t.Helper()
	var m rpc
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("the proxy sent %q: %v", b, err)
	}
	m.raw = string(b)
	return m
}

// rawEditor drives a Proxy with raw JSON lines, as an editor does.
type rawEditor struct {
	t      *testing.T
	stdin  *io.PipeWriter
	out    *bufio.Reader
	runErr chan error
}

// startRaw runs a Proxy over dial with opts, driven by a rawEditor.
func startRaw(t *testing.T, dial connect.DialFunc, opts *connect.Options) *rawEditor {
	proxyIn, stdin := io.Pipe()
	stdout, proxyOut := io.Pipe()
	p := connect.New(dial, opts)
	e := &rawEditor{t: t, stdin: stdin, out: bufio.NewReader(stdout), runErr: make(chan error, 1)}
	go func() {
		e.runErr <- p.Run(context.Background(), acp.NewLineStream(proxyIn, proxyOut))
		_ = proxyOut.Close()
	}()
	return e
}

func (e *rawEditor) send(msg string) {
	e.t.Helper()
	if _, err := e.stdin.Write([]byte(msg + "\n")); err != nil {
		e.t.Fatal(err)
	}
}

// next returns the next message the proxy wrote to the editor.
func (e *rawEditor) next() rpc {
	e.t.Helper()
	line, err := e.out.ReadBytes('\n')
	if err != nil {
		e.t.Fatalf("reading the proxy's output: %v", err)
	}
	return decodeRPC(e.t, line)
}

// end closes stdin and returns Run's error.
func (e *rawEditor) end() error {
	_ = e.stdin.Close()
	go func() { _, _ = io.Copy(io.Discard, e.out) }() // what is left
	return <-e.runErr
}

// dialer hands out the links of a channel, or an error once it is closed.
func dialer(links <-chan connect.Link, fail error) connect.DialFunc {
	return func(ctx context.Context) (connect.Link, error) {
		select {
		case l, ok := <-links:
			if !ok {
				return nil, fail
			}
			return l, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

var errRefused = errors.New("dial tcp 127.0.0.1:7777: connect: connection refused")

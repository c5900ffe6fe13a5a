package acpclient

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
)

// Process is an ACP agent run as a child process, spoken to over its stdio,
// as an editor does.
type Process struct {
	Cmd    *exec.Cmd
	Conn   *acpsdk.ClientSideConnection
	Client *Recorder
	stdin  io.WriteCloser
	waited chan error
}

// Start runs the agent command with the client rec and returns once it is
// running. stderr receives the agent's logs (nil discards them).
func Start(bin string, args []string, env []string, stderr io.Writer, rec *Recorder) (*Process, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting agent: %w", err)
	}
	if rec == nil {
		rec = &Recorder{}
	}
	p := &Process{Cmd: cmd, Client: rec, stdin: stdin, waited: make(chan error, 1)}
	p.Conn = NewConnection(rec, stdin, stdout)
	go func() { p.waited <- cmd.Wait() }()
	return p, nil
}

// Initialize sends initialize with protocol version 1, advertising fs
// when the client has FS, terminal when it has Terminals and the
// elicitation modes of its Elicitation.
func (p *Process) Initialize(ctx context.Context) (acpsdk.InitializeResponse, error) {
	var caps acpsdk.ClientCapabilities
	if p.Client.FS != nil {
		caps.Fs = acpsdk.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true}
	}
	caps.Terminal = p.Client.Terminals != nil
	caps.Elicitation = p.Client.Elicitation.capabilities()
	return p.Conn.Initialize(ctx, acpsdk.InitializeRequest{
		ProtocolVersion:    acpsdk.ProtocolVersionNumber,
		ClientCapabilities: caps,
		ClientInfo:         &acpsdk.Implementation{Name: "acp-agent-test-client", Version: "1"},
	})
}

// Prompt sends one text prompt and returns its stop reason.
func (p *Process) Prompt(ctx context.Context, sessionID, text string) (acpsdk.StopReason, error) {
	res, err := p.Conn.Prompt(ctx, acpsdk.PromptRequest{SessionId: acpsdk.SessionId(sessionID), Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock(text)}})
	return res.StopReason, err
}

// CloseStdin closes the agent's stdin, as an editor that quits does.
func (p *Process) CloseStdin() error { return p.stdin.Close() }

// Wait waits for the agent to exit, up to timeout; on timeout it kills it
// and returns an error.
func (p *Process) Wait(timeout time.Duration) error {
	select {
	case err := <-p.waited:
		p.waited <- err
		return err
	case <-time.After(timeout):
		_ = p.Cmd.Process.Kill()
		return fmt.Errorf("agent did not exit within %s", timeout)
	}
}

// Stop closes stdin and waits for the agent to exit, killing it after timeout.
func (p *Process) Stop(timeout time.Duration) error {
	_ = p.CloseStdin()
	return p.Wait(timeout)
}

// NewConnection returns acp-go-sdk's client side over w and r with its
// logger discarding. acp-go-sdk starts reading in NewClientSideConnection,
// before SetLogger can be called without a data race, so reads from r are
// held back until the logger is set.
func NewConnection(rec *Recorder, w io.Writer, r io.Reader) *acpsdk.ClientSideConnection {
	start := make(chan struct{})
	if rec.MCP != nil {
		w, r = rec.MCP.wrap(w, r)
	}
	conn := acpsdk.NewClientSideConnection(rec, w, &gatedReader{r: r, start: start})
	conn.SetLogger(slog.New(slog.DiscardHandler))
	close(start)
	return conn
}

// gatedReader blocks reads until start is closed.
type gatedReader struct {
	r     io.Reader
	start <-chan struct{}
}

func (g *gatedReader) Read(p []byte) (int, error) {
	<-g.start
	return g.r.Read(p)
}

package acpclient

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	acpsdk "github.com/coder/acp-go-sdk"
	"golang.org/x/sys/unix"
)

// TerminalCall is one terminal/* request a LocalTerminals served.
type TerminalCall struct {
	// Method is the ACP method, such as "terminal/create".
	Method     string
	TerminalID string
	// Command, Args, Cwd and OutputByteLimit are those of terminal/create.
	Command         string
	Args            []string
	Cwd             string
	OutputByteLimit int
	// Pid is the process of terminal/create's command (0 if it did not
	// start).
	Pid int
}

// LocalTerminals is a TerminalHost that runs each terminal's command on
// this machine with os/exec, as an editor's terminal would: in the
// requested cwd, with this process's environment plus the requested
// variables, stdin empty, stdout and stderr interleaved, in a process group
// of its own so that terminal/kill and terminal/release end everything the
// command started. Output beyond outputByteLimit (default
// DefaultOutputByteLimit) drops its start, at a character boundary. It
// records every call (Calls). The zero value is ready to use; it is safe for
// concurrent use. Close kills what still runs.
type LocalTerminals struct {
	mu     sync.Mutex
	next   int
	terms  map[string]*localTerminal // live terminals, until terminal/release
	calls  []TerminalCall
	closed bool
}

// DefaultOutputByteLimit is the output a LocalTerminals terminal keeps when
// terminal/create gives no outputByteLimit (1 MiB).
const DefaultOutputByteLimit = 1 << 20

var _ TerminalHost = (*LocalTerminals)(nil)

// localTerminal is one command. Its exit fields are written before done is
// closed; out is guarded by mu.
type localTerminal struct {
	cmd   *exec.Cmd
	limit int
	done  chan struct{} // closed once the command has exited and been waited for
	exit  acpsdk.TerminalExitStatus

	mu        sync.Mutex
	out       []byte
	truncated bool
}

// Write appends p to the output, dropping its start beyond the limit.
func (t *localTerminal) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.out = append(t.out, p...)
	if over := len(t.out) - t.limit; over > 0 {
		for over < len(t.out) && !utf8.RuneStart(t.out[over]) {
			over++
		}
		t.out = append(t.out[:0], t.out[over:]...)
		t.truncated = true
	}
	return len(p), nil
}

// Calls returns a copy of the requests served so far, in order.
func (h *LocalTerminals) Calls() []TerminalCall {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.calls)
}

// Methods returns the methods of Calls, in order.
func (h *LocalTerminals) Methods() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, len(h.calls))
	for i, c := range h.calls {
		out[i] = c.Method
	}
	return out
}

func (h *LocalTerminals) record(c TerminalCall) {
	h.mu.Lock()
	h.calls = append(h.calls, c)
	h.mu.Unlock()
}

// terminal returns the live terminal id, or an invalid-params error naming
// it.
func (h *LocalTerminals) terminal(method, id string) (*localTerminal, error) {
	h.record(TerminalCall{Method: method, TerminalID: id})
	h.mu.Lock()
	defer h.mu.Unlock()
	if t, ok := h.terms[id]; ok {
		return t, nil
	}
	return nil, acpsdk.NewInvalidParams(map[string]any{"terminalId": id, "error": "no such terminal (never created, or released)"})
}

// CreateTerminal implements TerminalHost: it starts the command and
// returns at once.
func (h *LocalTerminals) CreateTerminal(_ context.Context, p acpsdk.CreateTerminalRequest) (acpsdk.CreateTerminalResponse, error) {
	call := TerminalCall{Method: acpsdk.ClientMethodTerminalCreate, Command: p.Command, Args: p.Args}
	t := &localTerminal{limit: DefaultOutputByteLimit, done: make(chan struct{})}
	if p.OutputByteLimit != nil && *p.OutputByteLimit > 0 {
		t.limit = *p.OutputByteLimit
		call.OutputByteLimit = t.limit
	}
	cmd := exec.Command(p.Command, p.Args...)
	if p.Cwd != nil {
		cmd.Dir, call.Cwd = *p.Cwd, *p.Cwd
	}
	cmd.Env = os.Environ()
	for _, v := range p.Env {
		cmd.Env = append(cmd.Env, v.Name+"="+v.Value)
	}
	cmd.Stdout, cmd.Stderr = t, t
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = time.Second // a background child holding the output open
	t.cmd = cmd
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		h.record(call)
		return acpsdk.CreateTerminalResponse{}, errors.New("terminal/create: the client is closed")
	}
	h.next++
	id := "term-" + strconv.Itoa(h.next)
	call.TerminalID = id
	if err := cmd.Start(); err != nil {
		h.mu.Unlock()
		h.record(call)
		return acpsdk.CreateTerminalResponse{}, fmt.Errorf("terminal/create %s: %w", p.Command, err)
	}
	call.Pid = cmd.Process.Pid
	if h.terms == nil {
		h.terms = make(map[string]*localTerminal)
	}
	h.terms[id] = t
	h.mu.Unlock()
	h.record(call)
	go func() { // owned by t: done reports its end, Close and Release wait for it
		_ = cmd.Wait() // the status is in ProcessState
		t.exit = exitStatusOf(cmd.ProcessState)
		close(t.done)
	}()
	return acpsdk.CreateTerminalResponse{TerminalId: id}, nil
}

// exitStatusOf is ACP's exit status of a command whose Wait returned (ps
// is nil if it never ran: exit code -1).
func exitStatusOf(ps *os.ProcessState) acpsdk.TerminalExitStatus {
	if ps == nil {
		code := -1
		return acpsdk.TerminalExitStatus{ExitCode: &code}
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		sig := unix.SignalName(ws.Signal())
		return acpsdk.TerminalExitStatus{Signal: &sig}
	}
	code := ps.ExitCode()
	return acpsdk.TerminalExitStatus{ExitCode: &code}
}

// TerminalOutput implements TerminalHost.
func (h *LocalTerminals) TerminalOutput(_ context.Context, p acpsdk.TerminalOutputRequest) (acpsdk.TerminalOutputResponse, error) {
	t, err := h.terminal(acpsdk.ClientMethodTerminalOutput, p.TerminalId)
	if err != nil {
		return acpsdk.TerminalOutputResponse{}, err
	}
	var res acpsdk.TerminalOutputResponse
	select {
	case <-t.done:
		exit := t.exit
		res.ExitStatus = &exit
	default:
	}
	t.mu.Lock()
	res.Output, res.Truncated = string(t.out), t.truncated
	t.mu.Unlock()
	return res, nil
}

// WaitForTerminalExit implements TerminalHost: it returns once the command
// has exited, or fails when ctx is done (the agent cancelled the request).
func (h *LocalTerminals) WaitForTerminalExit(ctx context.Context, p acpsdk.WaitForTerminalExitRequest) (acpsdk.WaitForTerminalExitResponse, error) {
	t, err := h.terminal(acpsdk.ClientMethodTerminalWaitForExit, p.TerminalId)
	if err != nil {
		return acpsdk.WaitForTerminalExitResponse{}, err
	}
	select {
	case <-t.done:
		return acpsdk.WaitForTerminalExitResponse{ExitCode: t.exit.ExitCode, Signal: t.exit.Signal}, nil
	case <-ctx.Done():
		return acpsdk.WaitForTerminalExitResponse{}, ctx.Err()
	}
}

// KillTerminal implements TerminalHost: SIGKILL to the command's process
// group; the terminal stays until released. It returns once the command
// has exited.
func (h *LocalTerminals) KillTerminal(ctx context.Context, p acpsdk.KillTerminalRequest) (acpsdk.KillTerminalResponse, error) {
	t, err := h.terminal(acpsdk.ClientMethodTerminalKill, p.TerminalId)
	if err != nil {
		return acpsdk.KillTerminalResponse{}, err
	}
	return acpsdk.KillTerminalResponse{}, t.kill(ctx)
}

// signalKill sends SIGKILL to t's process group, unless the command has
// been waited for (its group id may be another's by now). A group already
// gone is no error.
func (t *localTerminal) signalKill() error {
	select {
	case <-t.done:
		return nil
	default:
	}
	if err := syscall.Kill(-t.cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// kill ends t's process group and waits for the command, until ctx is done.
func (t *localTerminal) kill(ctx context.Context) error {
	if err := t.signalKill(); err != nil {
		return err
	}
	select {
	case <-t.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ReleaseTerminal implements TerminalHost: it kills the command if it still
// runs and forgets the terminal.
func (h *LocalTerminals) ReleaseTerminal(ctx context.Context, p acpsdk.ReleaseTerminalRequest) (acpsdk.ReleaseTerminalResponse, error) {
	t, err := h.terminal(acpsdk.ClientMethodTerminalRelease, p.TerminalId)
	if err != nil {
		return acpsdk.ReleaseTerminalResponse{}, err
	}
	h.mu.Lock()
	delete(h.terms, p.TerminalId)
	h.mu.Unlock()
	return acpsdk.ReleaseTerminalResponse{}, t.kill(ctx)
}

// Close kills every terminal not released yet and waits for their
// commands; later terminal/create requests fail. It is idempotent.
func (h *LocalTerminals) Close() {
	h.mu.Lock()
	h.closed = true
	terms := h.terms
	h.terms = nil
	h.mu.Unlock()
	for _, t := range terms {
		if t.signalKill() == nil {
			<-t.done
		}
	}
}

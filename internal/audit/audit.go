// Package audit is acp-agent's audit log of tool calls: one JSON line per
// call that the agent loop settled (who called which tool, what the
// permissions policy or the user decided, and how it ended), written by a
// [Log] without ever blocking a turn.
//
// A line (fields always present, in this order; arguments and result only
// when the Log was asked to include them):
//
//	{"time":"2026-11-26T16:42:30.123Z","tenant":"","sessionId":"…","toolCallId":"call_…",
//	 "server":"github","tool":"mcp__github__create_issue","permission":"allow_once",
//	 "outcome":"completed","durationMs":812.4}
//
// # Concurrency
//
// [Log.ToolCall] may be called from any goroutine; one goroutine, owned by
// the Log, writes. [Log.Close] waits for it, bounded by its context.
package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Permission is what decided that a tool call could run, or not.
type Permission string

// The permission decisions of a Record.
const (
	// PermissionPolicyAllow: the permissions policy allows the tool
	// (mode allow, an allow glob, or a read-only tool in mode ask), or it
	// is one of the agent's built-in tools outside the policy.
	PermissionPolicyAllow Permission = "allowed_by_policy"
	// PermissionPolicyDeny: the policy denies the tool; the call did not run.
	PermissionPolicyDeny Permission = "denied_by_policy"
	// PermissionModeDeny: the session is in read-only mode and the tool
	// may change things; the call did not run.
	PermissionModeDeny Permission = "denied_by_mode"
	// PermissionAllowOnce and PermissionAllowAlways: the user was asked and
	// allowed the call (once, or for the rest of the session).
	PermissionAllowOnce   Permission = "allow_once"
	PermissionAllowAlways Permission = "allow_always"
	// PermissionAllowedAlways: an earlier "allow always" answer of the
	// session covered the call; nobody was asked.
	PermissionAllowedAlways Permission = "allowed_always"
	// PermissionRejected: the user was asked and rejected the call.
	PermissionRejected Permission = "rejected"
	// PermissionCancelled: the question went unanswered (the turn was
	// cancelled, or asking failed).
	PermissionCancelled Permission = "cancelled"
	// PermissionUnavailable: the policy asks, but the client cannot be
	// asked; the call did not run.
	PermissionUnavailable Permission = "unavailable"
	// PermissionNotAsked: the policy asks, but the front end has no one to
	// ask (no ask function): the call ran.
	PermissionNotAsked Permission = "not_asked"
	// PermissionUnknownTool: no such tool in the session.
	PermissionUnknownTool Permission = "unknown_tool"
)

// Outcome is how a tool call ended.
type Outcome string

// The outcomes of a Record.
const (
	OutcomeCompleted Outcome = "completed" // ran, and its result is not an error
	OutcomeFailed    Outcome = "failed"    // ran, and failed (an isError result or a fault)
	OutcomeCancelled Outcome = "cancelled" // cancelled before or while it ran
	OutcomeNotRun    Outcome = "not_run"   // denied, rejected, unavailable, or an unknown tool
)

// Record is one tool call. Arguments and Result are written only when the
// Log includes them (Options).
type Record struct {
	// Time is when the call was announced (before any permission question).
	Time time.Time `json:"time"`
	// Tenant is the gateway tenant whose session made the call (the
	// token's tenant of the connection: gateway.SendRequest.Tenant), or ""
	// (a local agent, the gateway's default tenant).
	Tenant string `json:"tenant"`
	// SessionID is the session's ACP sessionId (gateway.SendRequest's
	// SessionID, never a key the client chose for it); a subagent's calls
	// have the subagent's, "<sessionId>/task-<callId>".
	SessionID string `json:"sessionId"`
	// CallID is the call's toolCallId.
	CallID string `json:"toolCallId"`
	// Server is the MCP server's name in the session ("" for a tool that
	// is no server's); Tool the model-facing tool name
	// (mcp__<server>__<tool>), as permissions globs match it.
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// Permission is what allowed or stopped the call.
	Permission Permission `json:"permission"`
	// Outcome is how it ended.
	Outcome Outcome `json:"outcome"`
	// Duration is from Time to the call's end, written as durationMs.
	Duration time.Duration `json:"-"`
	// Arguments are the call's arguments; Result its result.
	Arguments map[string]any `json:"arguments,omitempty"`
	Result    any            `json:"result,omitempty"`
}

// MarshalJSON writes r with Duration as durationMs (milliseconds, a
// number with microsecond precision) and Time in UTC.
func (r Record) MarshalJSON() ([]byte, error) {
	type plain Record
	r.Time = r.Time.UTC()
	return json.Marshal(struct {
		plain
		DurationMs float64 `json:"durationMs"`
	}{plain(r), float64(r.Duration.Microseconds()) / 1000})
}

// Auditor receives the tool calls to audit. Implementations must not block.
type Auditor interface {
	ToolCall(Record)
}

// DefaultBuffer is how many lines wait for the writer before new ones are
// dropped (Options.Buffer).
const DefaultBuffer = 4096

// Options configure a Log. The zero value writes neither arguments nor
// results.
type Options struct {
	// IncludeArguments and IncludeResults write each call's arguments and
	// result (config audit.includeArguments, audit.includeResults). Both
	// may carry secrets and personal data: off by default.
	IncludeArguments, IncludeResults bool
	// Buffer is how many lines may wait for the writer; zero or negative
	// means DefaultBuffer. A line that finds the buffer full is dropped and
	// counted.
	Buffer int
	// Logger receives write failures and dropped lines. Nil discards them.
	Logger *slog.Logger
}

// Log is an audit log: JSON lines written by its own goroutine. A Log is
// safe for concurrent use; ToolCall never blocks.
type Log struct {
	opts    Options
	w       io.Writer
	closer  io.Closer // nil for New's writer
	lines   chan Record
	done    chan struct{} // closed when the writer goroutine has returned
	dropped atomic.Int64
	// closeOnce guards closing lines, fileOnce closing the file; closed
	// tells ToolCall to drop.
	closeOnce, fileOnce sync.Once
	fileErr             error        // set by fileOnce
	mu                  sync.RWMutex // held for reading by ToolCall's send, for writing by Close
	closed              bool         // guarded by mu
}

var _ Auditor = (*Log)(nil)

// Open appends to the file at path, created with mode 0600 when missing.
// It refuses, with an error naming path and the rule, a path that is a
// symbolic link (O_NOFOLLOW: a link planted there would have the agent
// append to its target), anything but a regular file, a file of another
// user, and a file group or others may read or write (the lines name
// sessions, tools and, when included, arguments and results). The checks
// are made on the opened file (fstat), so nothing can swap it in between;
// O_NONBLOCK (no effect on a regular file's writes) keeps a FIFO planted
// there from holding the start up.
func Open(path string, opts *Options) (*Log, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("audit log %q is a symbolic link: the agent appends only to a regular file it owns; remove the link or name its target", path)
		}
		return nil, fmt.Errorf("audit log %q: %w", path, err)
	}
	if err := checkFile(path, f); err != nil {
		_ = f.Close()
		return nil, err
	}
	l := New(f, opts)
	l.closer = f
	return l, nil
}

// checkFile refuses f (the file at path) unless it is a regular file of
// this process's user without group or other permission bits.
func checkFile(path string, f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("audit log %q: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("audit log %q is not a regular file (%s): the agent appends only to a regular file it owns", path, fi.Mode().Type())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("audit log %q belongs to user %d, not to the agent's (%d): the agent appends only to a file it owns", path, st.Uid, os.Getuid())
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("audit log %q is readable or writable by group or others (mode %04o): its lines name sessions and tools; chmod 600 it", path, perm)
	}
	return nil
}

// New returns a Log writing to w, which Close does not close. opts may be
// nil.
func New(w io.Writer, opts *Options) *Log {
	l := &Log{w: w, done: make(chan struct{})}
	if opts != nil {
		l.opts = *opts
	}
	if l.opts.Buffer <= 0 {
		l.opts.Buffer = DefaultBuffer
	}
	if l.opts.Logger == nil {
		l.opts.Logger = slog.New(slog.DiscardHandler)
	}
	l.lines = make(chan Record, l.opts.Buffer)
	go l.write()
	return l
}

// ToolCall queues r for writing, without its arguments and result unless
// the Log includes them. When the buffer is full, or the Log is closed, r
// is dropped and counted ([Log.Dropped]); the writer logs the count.
func (l *Log) ToolCall(r Record) {
	if !l.opts.IncludeArguments {
		r.Arguments = nil
	}
	if !l.opts.IncludeResults {
		r.Result = nil
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		l.dropped.Add(1)
		return
	}
	select {
	case l.lines <- r:
	default:
		l.dropped.Add(1)
	}
}

// Dropped returns how many lines were dropped so far: the buffer was full,
// the Log was closed, or writing failed (a full disk). Metrics export it as
// acp_agent_audit_dropped_lines_total.
func (l *Log) Dropped() int64 { return l.dropped.Load() }

// write is the writer goroutine: one line per record, then a warning
// whenever lines were dropped since the last one.
func (l *Log) write() {
	defer close(l.done)
	var told int64
	for r := range l.lines {
		line, err := json.Marshal(r)
		if err == nil {
			_, err = l.w.Write(append(line, '\n'))
		}
		if err != nil {
			l.dropped.Add(1)
			l.opts.Logger.Warn("audit log: cannot write a line", "err", err)
		}
		if d := l.dropped.Load(); d > told && len(l.lines) == 0 {
			l.opts.Logger.Warn("audit log: lines dropped (the writer fell behind, failed, or the log was closed)", "dropped", d-told, "total", d)
			told = d
		}
	}
}

// Close stops taking lines, waits for the queued ones to be written (at
// most until ctx is done) and closes the file Open opened. It may be called
// more than once; later calls only wait.
func (l *Log) Close(ctx context.Context) error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closed = true
		close(l.lines)
		l.mu.Unlock()
	})
	select {
	case <-l.done:
	case <-ctx.Done():
		return fmt.Errorf("audit log: %d lines not written: %w", len(l.lines), ctx.Err())
	}
	if d := l.dropped.Load(); d > 0 {
		l.opts.Logger.Warn("audit log closed; lines were dropped", "dropped", d)
	}
	l.fileOnce.Do(func() {
		if l.closer != nil {
			l.fileErr = l.closer.Close()
		}
	})
	return l.fileErr
}

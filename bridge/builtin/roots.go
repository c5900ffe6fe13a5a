package builtin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// errClosed is the error of a local file operation once the tools are
// closed (rootSet.Close).
var errClosed = errors.New("the built-in tools of this session are closed")

// rootSet is the session directories (the cwd, then the additional
// directories) opened as os.Roots: every local file operation of the tools
// goes through the root of the directory that holds its path, by a name
// relative to it, so that no path is opened again by its absolute name
// after it was checked, and no symbolic link leads it out (see resolve).
//
// The roots are opened by openRoots, and held while the server has a
// connected MCP session: they are closed when the last session that sent a
// request ends (the bridge closes the session at session end) and opened
// again, from the same directory names, by the first operation after that
// (a later connection: the bridge's first call after listing the tools, or
// a redial). Close closes them for good. A directory that cannot be opened
// as a root allows nothing: the operations on paths in it fail with the
// error naming it.
//
// A rootSet is safe for concurrent use. A root closed while an operation
// uses it stays open until that operation ends (os.Root counts its users).
type rootSet struct {
	dirs []string // the directories: the cwd, then the additional ones; absolute and clean; never changes

	mu       sync.Mutex
	roots    []*os.Root                      // guarded by mu: by dirs' index, nil where errs says why; the slice nil while released
	errs     []error                         // guarded by mu: why the directory of the same index could not be opened
	sessions map[*mcp.ServerSession]struct{} // guarded by mu: the MCP sessions that sent a request and have not ended
	closed   bool                            // guarded by mu: Close was called; nothing opens again
}

// openRoots opens every directory of dirs as a root.
func openRoots(dirs []string) *rootSet {
	s := &rootSet{dirs: dirs, sessions: make(map[*mcp.ServerSession]struct{})}
	s.open()
	return s
}

// open opens the roots; s.mu is held, or s is not shared yet.
func (s *rootSet) open() {
	s.roots, s.errs = make([]*os.Root, len(s.dirs)), make([]error, len(s.dirs))
	for i, d := range s.dirs {
		s.roots[i], s.errs[i] = os.OpenRoot(d)
	}
}

// release closes the roots, to be opened again on next use; s.mu is held.
func (s *rootSet) release() {
	for _, r := range s.roots {
		if r != nil {
			_ = r.Close()
		}
	}
	s.roots, s.errs = nil, nil
}

// root returns the root of the directory of index i (0: the cwd), opening
// the roots again if the last session had released them. Its error names
// the directory that cannot be opened, or is errClosed. A nil s (tools
// built without directories) has no roots.
func (s *rootSet) root(i int) (*os.Root, error) {
	if s == nil {
		return nil, errClosed
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return nil, errClosed
	case s.roots == nil:
		s.open()
	}
	if err := s.errs[i]; err != nil {
		what := "the session directory"
		if i > 0 {
			what = "the additional directory"
		}
		return nil, fmt.Errorf("%s %s cannot be opened (%v): no path in it can be used", what, s.dirs[i], unwrapPath(err))
	}
	return s.roots[i], nil
}

// trackSessions is receiving middleware of the server: the first request
// of each MCP session registers it (track), so that the roots are released
// when the last one ends.
func (s *rootSet) trackSessions(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
			s.track(ss)
		}
		return next(ctx, method, req)
	}
}

// track registers the session ss, once. The goroutine it starts lives as
// long as the session: it returns when the session's connection is closed
// and its handlers have returned (mcp.ServerSession.Wait), which whoever
// connected it brings about (the bridge, at session end), and then
// releases the roots if ss was the last session.
func (s *rootSet) track(ss *mcp.ServerSession) {
	s.mu.Lock()
	if _, ok := s.sessions[ss]; ok || s.closed {
		s.mu.Unlock()
		return
	}
	s.sessions[ss] = struct{}{}
	s.mu.Unlock()
	go func() {
		_ = ss.Wait()
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.sessions, ss)
		if len(s.sessions) == 0 && !s.closed {
			s.release()
		}
	}()
}

// Close closes the roots for good: every later local operation fails with
// errClosed. Close may be called more than once, concurrently; it does not
// wait for operations in progress (each keeps its root open until it ends).
func (s *rootSet) Close() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		s.release()
	}
	return nil
}

// escapes reports whether err, from an operation of r, is os.Root's refusal
// of a path that leads out of it (through "..", an absolute symbolic link
// or one that climbs out). package os does not export that error; an Lstat
// of ".." returns it without a system call, to compare with.
func escapes(r *os.Root, err error) bool {
	_, e := r.Lstat("..")
	if e == nil || errors.Is(e, os.ErrClosed) {
		return false
	}
	return errors.Is(err, unwrapPath(e))
}

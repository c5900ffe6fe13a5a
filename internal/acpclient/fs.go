package acpclient

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	acpsdk "github.com/coder/acp-go-sdk"
)

// FSCall is one fs/* request a DirFS received.
type FSCall struct {
	// Method is acpsdk.ClientMethodFsReadTextFile or
	// acpsdk.ClientMethodFsWriteTextFile.
	Method string
	// Path is the requested path, as sent.
	Path string
	// Line and Limit are fs/read_text_file's, 0 when absent.
	Line, Limit int
	// Content is what fs/write_text_file wrote.
	Content string
}

// codeResourceNotFound is ACP's error code for a missing resource
// (https://agentclientprotocol.com/protocol/schema#errorcode).
const codeResourceNotFound = -32002

// DirFS is a FileSystem over the real files under Root, as an editor
// serves them: it records every call, and an overlay of unsaved buffers
// (SetUnsaved) wins over the disk on reads, as an editor's open buffers do.
// A path that is not absolute or not inside Root is refused with
// invalid_params; a missing file is ACP's resource-not-found error
// (-32002). fs/write_text_file writes the file (creating it, not its
// directories) and drops its unsaved buffer, as an editor that saves.
// Safe for concurrent use.
type DirFS struct {
	// Root is the absolute directory DirFS serves; set it before use.
	Root string

	mu      sync.Mutex
	calls   []FSCall          // every request, in order of arrival
	unsaved map[string]string // clean absolute path -> text not saved to disk
}

var _ FileSystem = (*DirFS)(nil)

// NewDirFS returns a DirFS serving root.
func NewDirFS(root string) *DirFS { return &DirFS{Root: root} }

// SetUnsaved sets the unsaved text of the file at the absolute path p:
// reads return it instead of the disk until a write to p.
func (f *DirFS) SetUnsaved(p, text string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.unsaved == nil {
		f.unsaved = map[string]string{}
	}
	f.unsaved[filepath.Clean(p)] = text
}

// Calls returns a copy of every request received so far, in order.
func (f *DirFS) Calls() []FSCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]FSCall(nil), f.calls...)
}

// check records c and returns the clean path, or the error for a path
// outside Root.
func (f *DirFS) check(c FSCall) (string, error) {
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.mu.Unlock()
	p := filepath.Clean(c.Path)
	rel, err := filepath.Rel(f.Root, p)
	if !filepath.IsAbs(c.Path) || err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", acpsdk.NewInvalidParams(map[string]any{"path": c.Path, "error": "the path must be absolute and inside " + f.Root})
	}
	return p, nil
}

// ReadTextFile implements FileSystem: the unsaved text, else the file's,
// from Line (1-based) for at most Limit lines.
func (f *DirFS) ReadTextFile(_ context.Context, req acpsdk.ReadTextFileRequest) (acpsdk.ReadTextFileResponse, error) {
	c := FSCall{Method: acpsdk.ClientMethodFsReadTextFile, Path: req.Path}
	if req.Line != nil {
		c.Line = *req.Line
	}
	if req.Limit != nil {
		c.Limit = *req.Limit
	}
	p, err := f.check(c)
	if err != nil {
		return acpsdk.ReadTextFileResponse{}, err
	}
	f.mu.Lock()
	text, ok := f.unsaved[p]
	f.mu.Unlock()
	if !ok {
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			return acpsdk.ReadTextFileResponse{}, &acpsdk.RequestError{Code: codeResourceNotFound, Message: "Resource not found", Data: map[string]any{"path": req.Path}}
		}
		if err != nil {
			return acpsdk.ReadTextFileResponse{}, acpsdk.NewInternalError(map[string]any{"path": req.Path, "error": err.Error()})
		}
		text = string(b)
	}
	if c.Line > 1 || c.Limit > 0 {
		lines := strings.SplitAfter(text, "\n")
		start := min(max(c.Line, 1)-1, len(lines))
		end := len(lines)
		if c.Limit > 0 {
			end = min(start+c.Limit, end)
		}
		text = strings.Join(lines[start:end], "")
	}
	return acpsdk.ReadTextFileResponse{Content: text}, nil
}

// WriteTextFile implements FileSystem: it writes the file and drops its
// unsaved text.
func (f *DirFS) WriteTextFile(_ context.Context, req acpsdk.WriteTextFileRequest) (acpsdk.WriteTextFileResponse, error) {
	p, err := f.check(FSCall{Method: acpsdk.ClientMethodFsWriteTextFile, Path: req.Path, Content: req.Content})
	if err != nil {
		return acpsdk.WriteTextFileResponse{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock() // writes of one DirFS are serialized, like the buffer they replace
	if err := os.WriteFile(p, []byte(req.Content), 0o644); err != nil {
		return acpsdk.WriteTextFileResponse{}, acpsdk.NewInternalError(map[string]any{"path": req.Path, "error": err.Error()})
	}
	delete(f.unsaved, p)
	return acpsdk.WriteTextFileResponse{}, nil
}

// Package builtin is acp-agent's own tools, served as an in-process MCP
// server named "acp" (bridge.ReservedServerName), so that the bridge offers
// them as "mcp__acp__<tool>" through the same path as any editor's server:
// naming, limits, permissions, content mapping, cancellation.
//
// # Tools
//
//   - read_file {path, offset?, limit?}: the text of a file, lines from offset
//     (1-based) for at most limit lines;
//   - write_file {path, content}: create or overwrite a file (and its missing
//     parent directories);
//   - edit_file {path, old_text, new_text, replace_all?}: replace an exact
//     string, once (it must occur exactly once) or everywhere;
//   - list_directory {path}: the entries of a directory;
//   - search_files {pattern, path?, regex?}: files whose path matches a glob
//     (pattern), and with regex the lines of those files that match it, at
//     most MaxMatches; symbolic links are not followed, .git is skipped;
//   - update_plan {entries: [{content, status, priority?}]}: the model's task
//     list, whole, which the client shows as the session's ACP plan;
//   - run_command {command, timeout_seconds?}: a shell command in the cwd,
//     in an editor terminal when the editor offers one, else a sandboxed
//     local child (see command.go).
//
// # Through the editor
//
// When the session's editor (Options.Editor) offers fs/read_text_file,
// read_file and edit_file read through it, so the text the user has not
// saved yet wins over the disk; when it offers fs/write_text_file,
// write_file and edit_file write through it (missing parent directories are
// still created on disk). Each method the editor does not offer is done
// locally. The same confinement checks run before any editor call, and the
// same limits apply to the editor's text. A file the editor cannot read and
// that is not on disk is "no such file": write_file then creates it,
// edit_file fails. Any other editor error is a tool error naming the path
// and the editor's answer. list_directory and search_files are always
// local.
//
// # Confinement
//
// Paths may be relative to the session cwd (Options.Root) or absolute
// inside it or one of Options.Dirs (ACP additionalDirectories); every path
// must stay inside them: ".." that climbs out, an absolute path elsewhere,
// or a symbolic link that leads out of all of them is a tool error (isError)
// naming the path, the rule and the allowed directories. Reads refuse
// binary files (a NUL byte in the first 8 KiB) and files over MaxFileBytes.
//
// The check by name is for the error texts; the enforcement is an os.Root
// per directory, opened by New. Every local file operation (open, stat,
// read a directory, walk, create, rename, make directories) goes through
// the root of the directory that holds its path, by a name relative to it,
// never again by an absolute name: a directory on the way swapped for a
// symbolic link that leads out, between the check and the use, fails the
// operation ("leads through a symbolic link outside ..."), and nothing is
// read, listed or created outside. Links that stay inside are followed.
// Reads open without blocking and check the open file (only regular files
// are read or written); writes create a new temporary file in the root and
// rename it over the file, so a hard link to a file elsewhere is replaced,
// not written through. list_directory and search_files stop once the call
// is cancelled or times out, between two entries.
//
// The editor (fs/read_text_file, fs/write_text_file) opens the path it is
// given by name, beyond any os.Root: it is asked only for paths that passed
// the check, and each is pinned at the moment of the call (pin.go): resolved
// through the root to the real path, with no symbolic link on the way
// (links inside resolved, one that leads out refused), which is what the
// editor gets, each directory on the way and the file identified (device
// and inode) through the root and by that name. After the call they are
// identified again: a directory on the way replaced or turned into a link
// (or, for a read, another file) fails the call with an error naming the
// path and saying it "changed during the call". A read's text then never
// reaches the model. A write may have gone through the swapped link to a
// file outside in that window: that is reported, not undone. A swap undone
// before the check after the call (a directory swapped out and back while
// the editor worked) is not seen.
//
// # On a gateway
//
// With Options.EditorOnly (acp-agent gateway, whose sessions' files are on
// the editor's machine) the tools touch nothing of the agent's host: no
// os.Root is opened, no path is looked at on disk, no process is started.
// read_file, write_file and edit_file go through the editor's fs methods
// and run_command through its terminal, whatever the editor lacks being an
// error result that names the method and says why the agent cannot do it
// itself; list_directory and search_files are not offered. A path is
// checked by name only (relative to Root, or absolute inside Root or
// Dirs, no ".." out): symbolic links, directories and file types are the
// editor's to judge. write_file's parent directories are the editor's to
// create, and a file the editor cannot read is written without a diff
// (whether it existed is not known here). The limits on a file's text
// apply as they do locally.
//
// # Presentation
//
// Results carry a gateway.Show in their _meta (bridge.MetaShow) for the
// client, never for the model: write_file and edit_file a diff (absolute
// path, the whole text before, nil for a new file, and after) and a
// location (the line of the first change), read_file a location (the first
// line read), update_plan the plan. The text for the model stays short.
//
// The tools declare their ACP kind and MCP annotations: read_file,
// list_directory, search_files and update_plan are read-only, so the
// permission policy asks only before writes and edits.
package builtin

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/editor"
)

// Name is the built-in server's name: its tools are "mcp__acp__<tool>".
const Name = bridge.ReservedServerName

// Limits of the tools.
const (
	// MaxFileBytes is the largest file read_file and edit_file read, and
	// the largest content write_file writes (10 MiB).
	MaxFileBytes = 10 << 20
	// MaxReadLines is read_file's default and largest limit.
	MaxReadLines = 2000
	// MaxEntries is the most entries list_directory returns.
	MaxEntries = 1000
	// MaxMatches is the most files or lines search_files returns.
	MaxMatches = 200
	// MaxScannedFiles is the most files search_files looks at.
	MaxScannedFiles = 20000
)

// kind is the _meta of a tool declaring its ACP tool kind
// (bridge.MetaToolKind).
func kind(k string) mcp.Meta { return mcp.Meta{bridge.MetaToolKind: k} }

// schemas holds the tools' input and output schemas, inferred from their Go
// types once per process rather than once per session.
var schemas = mcp.NewSchemaCache()

// Options are the session a built-in server works for.
type Options struct {
	// Root is the session cwd, an absolute path to a directory: relative
	// paths start there.
	Root string
	// Dirs are more absolute directories the tools may work in (ACP
	// additionalDirectories); relative entries are ignored.
	Dirs []string
	// Editor is the session's editor, or nil: the tools use the methods it
	// offers and work locally otherwise (but see EditorOnly).
	Editor editor.Editor
	// EditorOnly is for an agent that is not on the machine of the
	// session's files, acp-agent gateway: Root and Dirs are paths on the
	// editor's machine, and the tools never touch the agent's own file
	// system or start a process. read_file, write_file and edit_file work
	// only through the editor's fs/read_text_file and fs/write_text_file,
	// run_command only in the editor's terminal; a method the editor does
	// not offer makes the call an error result naming the method. Paths
	// are confined by name only (the links on the editor's machine are
	// the editor's to judge), and no os.Root is opened.
	// list_directory and search_files, which ACP has no method for, are
	// not offered.
	//
	// The tool list is fixed by EditorOnly alone, whatever the editor
	// offers: a lazy in-process server's list is kept once per process by
	// name (session.InProcessServer.Lazy, bridge.ServerSpec.ToolsKey), so
	// a process builds its built-in servers all with EditorOnly or all
	// without.
	EditorOnly bool
	// Confine confines run_command by the session's mode: its local child,
	// and its editor terminal unless EditorOnly (the agent is then not on
	// the terminal's machine). Nil confines nothing.
	Confine *bridge.Confine
}

// New returns the built-in server of one session. Each call returns a new
// server, safe for concurrent use.
//
// New opens Root and each of Dirs as an os.Root (one file descriptor each),
// through which every local file operation of the tools goes (see
// Confinement). The server holds them while it has a connected MCP
// session: they are closed when its last session ends (the bridge ends it
// with the ACP session) and opened again if a session connects later. A
// directory that cannot be opened allows nothing: a tool's path in it is an
// error naming the directory. With Options.EditorOnly nothing is opened
// (see On a gateway). opts may be nil (no Root: nothing allowed); it is
// copied.
func New(opts *Options) *mcp.Server {
	var o Options
	if opts != nil {
		o = *opts
	}
	return newTools(o).server()
}

// server returns the MCP server of the tools t.
func (t *tools) server() *mcp.Server {
	// The tools are all added here and never change: advertising no
	// tools/list_changed spares every session a subscriptions/listen stream
	// (2026-07-28), that is a goroutine on each side held while it idles.
	// No logging either: the built-in tools send no MCP log messages (and
	// the bridge then sends no logging/setLevel to them).
	caps := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}
	s := mcp.NewServer(&mcp.Implementation{Name: Name, Title: "acp-agent built-in tools", Version: "1"}, &mcp.ServerOptions{SchemaCache: schemas, Capabilities: caps})
	if t.fs != nil { // EditorOnly tools have no roots
		s.AddReceivingMiddleware(t.fs.trackSessions)
	}
	addUpdatePlan(s, t)
	no := false
	mcp.AddTool(s, &mcp.Tool{
		Name:        "read_file",
		Meta:        kind("read"),
		Description: "Read a text file. path is relative to the session directory (or absolute inside it or an additional directory); offset is the first line (1-based), limit the number of lines (default and maximum 2000). Lines longer than 2000 characters are cut.",
		Annotations: &mcp.ToolAnnotations{Title: "Read file", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &no},
	}, t.readFile)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "write_file",
		Meta:        kind("edit"),
		Description: "Create a text file, or overwrite it, with content. Missing parent directories are created.",
		Annotations: &mcp.ToolAnnotations{Title: "Write file", IdempotentHint: true, OpenWorldHint: &no},
	}, t.writeFile)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "edit_file",
		Meta:        kind("edit"),
		Description: "Replace old_text with new_text in a file. old_text must occur exactly once, unless replace_all is true (then every occurrence is replaced). Fails when old_text is not found.",
		Annotations: &mcp.ToolAnnotations{Title: "Edit file", OpenWorldHint: &no},
	}, t.editFile)
	addRunCommand(s, t)
	if t.editorOnly {
		return s // ACP has no method to list or search the editor's files
	}
	mcp.AddTool(s, &mcp.Tool{
		Name:        "list_directory",
		Meta:        kind("read"),
		Description: "List the entries of a directory (name, type, size).",
		Annotations: &mcp.ToolAnnotations{Title: "List directory", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &no},
	}, t.listDirectory)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "search_files",
		Meta:        kind("search"),
		Description: "Find files under path (default: the session directory) whose path relative to it matches the glob pattern: a pattern without \"/\" matches base names at any depth (\"*.go\"), one with \"/\" whole paths, \"**\" matching any number of directories (\"cmd/**/*.go\"). With regex, return instead the lines of those files matching the regular expression (RE2 syntax), as path:line:text. Results are capped at 200.",
		Annotations: &mcp.ToolAnnotations{Title: "Search files", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &no},
	}, t.searchFiles)
	return s
}

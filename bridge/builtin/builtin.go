// Package builtin is acp-agent's own tools, served as an in-process MCP
// server named "acp" (bridge.ReservedServerName), so that the bridge offers
// them as "mcp__acp__<tool>" through the same path as any editor's server:
// naming, limits, permissions, content mapping, cancellation.
//
// The tools work on local files under one directory, the session cwd:
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
//     most MaxMatches; symbolic links are not followed, .git is skipped.
//
// Paths may be relative to the cwd; every path must stay inside it: ".."
// that climbs out, an absolute path elsewhere, or a symbolic link that
// leads out is a tool error (isError) naming the path and the rule. Reads
// refuse binary files (a NUL byte in the first 8 KiB) and files over
// MaxFileBytes. The tools declare MCP annotations: read_file,
// list_directory and search_files are read-only, so the permission policy
// asks only before writes and edits.
package builtin

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/bridge"
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

// New returns the built-in server for a session whose directory is cwd (an
// absolute path to a directory). Each call returns a new server; it keeps
// no state between calls and is safe for concurrent use.
func New(cwd string) *mcp.Server {
	t := &tools{root: cwd}
	s := mcp.NewServer(&mcp.Implementation{Name: Name, Title: "acp-agent built-in tools", Version: "1"}, &mcp.ServerOptions{SchemaCache: schemas})
	no := false
	mcp.AddTool(s, &mcp.Tool{
		Name:        "read_file",
		Meta:        kind("read"),
		Description: "Read a text file. path is relative to the session directory (or absolute inside it); offset is the first line (1-based), limit the number of lines (default and maximum 2000). Lines longer than 2000 characters are cut.",
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

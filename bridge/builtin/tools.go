package builtin

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxLineChars is where read_file and search_files cut a long line.
const maxLineChars = 2000

// binarySniff is how much of a file is checked for a NUL byte.
const binarySniff = 8 << 10

// ReadFileInput is read_file's arguments.
type ReadFileInput struct {
	Path   string `json:"path" jsonschema:"the file, relative to the session directory or absolute inside it"`
	Offset int    `json:"offset,omitempty" jsonschema:"the first line to return, 1-based (default 1)"`
	Limit  int    `json:"limit,omitempty" jsonschema:"how many lines to return (default and maximum 2000)"`
}

// ReadFileOutput is read_file's structured result.
type ReadFileOutput struct {
	Path       string `json:"path"`
	Content    string `json:"content"`
	StartLine  int    `json:"startLine"`
	EndLine    int    `json:"endLine"`
	TotalLines int    `json:"totalLines"`
}

// WriteFileInput is write_file's arguments.
type WriteFileInput struct {
	Path    string `json:"path" jsonschema:"the file, relative to the session directory or absolute inside it"`
	Content string `json:"content" jsonschema:"the file's new text"`
}

// WriteFileOutput is write_file's structured result.
type WriteFileOutput struct {
	Path    string `json:"path"`
	Bytes   int    `json:"bytes"`
	Created bool   `json:"created"`
}

// EditFileInput is edit_file's arguments.
type EditFileInput struct {
	Path       string `json:"path" jsonschema:"the file, relative to the session directory or absolute inside it"`
	OldText    string `json:"old_text" jsonschema:"the exact text to replace; it must occur exactly once unless replace_all is true"`
	NewText    string `json:"new_text" jsonschema:"the replacement text"`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema:"replace every occurrence of old_text"`
}

// EditFileOutput is edit_file's structured result.
type EditFileOutput struct {
	Path         string `json:"path"`
	Replacements int    `json:"replacements"`
}

// ListDirectoryInput is list_directory's arguments.
type ListDirectoryInput struct {
	Path string `json:"path" jsonschema:"the directory, relative to the session directory (\".\" for itself) or absolute inside it"`
}

// Entry is one entry of list_directory.
type Entry struct {
	Name string `json:"name"`
	// Type is "file", "dir", "symlink" or "other".
	Type string `json:"type"`
	Size int64  `json:"size"`
}

// ListDirectoryOutput is list_directory's structured result.
type ListDirectoryOutput struct {
	Path      string  `json:"path"`
	Entries   []Entry `json:"entries"`
	Truncated bool    `json:"truncated,omitempty"`
}

// SearchFilesInput is search_files' arguments.
type SearchFilesInput struct {
	Pattern string `json:"pattern" jsonschema:"a glob over paths relative to path: \"*.go\" (no slash) matches base names at any depth, \"cmd/**/*.go\" whole paths, ** any number of directories"`
	Path    string `json:"path,omitempty" jsonschema:"the directory to search (default: the session directory)"`
	Regex   string `json:"regex,omitempty" jsonschema:"if set, return the lines of the matching files that match this regular expression (RE2)"`
}

// SearchFilesOutput is search_files' structured result: Files without
// regex, else Lines as "path:line:text".
type SearchFilesOutput struct {
	Files     []string `json:"files,omitempty"`
	Lines     []string `json:"lines,omitempty"`
	Truncated bool     `json:"truncated,omitempty"`
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// readText reads the text file at real, refusing directories, files over
// MaxFileBytes and binary files; name is the path as the model gave it.
func readText(real, name string) ([]byte, error) {
	fi, err := os.Stat(real)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("path %q: no such file", name)
		}
		return nil, fmt.Errorf("path %q: %w", name, unwrapPath(err))
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("path %q is a directory: use list_directory", name)
	}
	if fi.Size() > MaxFileBytes {
		return nil, fmt.Errorf("path %q is %d bytes: files over %d bytes are not read", name, fi.Size(), MaxFileBytes)
	}
	b, err := os.ReadFile(real)
	if err != nil {
		return nil, fmt.Errorf("path %q: %w", name, unwrapPath(err))
	}
	if len(b) > MaxFileBytes {
		return nil, fmt.Errorf("path %q is over %d bytes: files that large are not read", name, MaxFileBytes)
	}
	if isBinary(b) {
		return nil, fmt.Errorf("path %q is a binary file (it contains NUL bytes): only text files are read", name)
	}
	return b, nil
}

func isBinary(b []byte) bool {
	return bytes.IndexByte(b[:min(len(b), binarySniff)], 0) >= 0
}

func (t *tools) readFile(_ context.Context, _ *mcp.CallToolRequest, in ReadFileInput) (*mcp.CallToolResult, ReadFileOutput, error) {
	real, err := t.resolve(in.Path)
	if err != nil {
		return nil, ReadFileOutput{}, err
	}
	if in.Offset < 0 || in.Limit < 0 {
		return nil, ReadFileOutput{}, fmt.Errorf("offset %d, limit %d: must not be negative", in.Offset, in.Limit)
	}
	b, err := readText(real, in.Path)
	if err != nil {
		return nil, ReadFileOutput{}, err
	}
	lines := strings.SplitAfter(string(b), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	start := max(in.Offset, 1)
	limit := in.Limit
	if limit == 0 || limit > MaxReadLines {
		limit = MaxReadLines
	}
	out := ReadFileOutput{Path: t.display(real), TotalLines: len(lines), StartLine: start}
	if start > len(lines) && len(lines) > 0 {
		return nil, ReadFileOutput{}, fmt.Errorf("offset %d: the file %q has %d lines", in.Offset, in.Path, len(lines))
	}
	end := min(start-1+limit, len(lines))
	var sb strings.Builder
	for _, l := range lines[min(start-1, len(lines)):end] {
		if len(l) > maxLineChars {
			l = l[:maxLineChars] + "… [line cut]\n"
		}
		sb.WriteString(l)
	}
	out.Content, out.EndLine = sb.String(), end
	msg := out.Content
	if end < len(lines) {
		msg += fmt.Sprintf("\n[lines %d-%d of %d; read on with offset %d]", start, end, len(lines), end+1)
	}
	return text(msg), out, nil
}

func (t *tools) writeFile(_ context.Context, _ *mcp.CallToolRequest, in WriteFileInput) (*mcp.CallToolResult, WriteFileOutput, error) {
	real, err := t.resolve(in.Path)
	if err != nil {
		return nil, WriteFileOutput{}, err
	}
	if len(in.Content) > MaxFileBytes {
		return nil, WriteFileOutput{}, fmt.Errorf("content for %q is %d bytes: at most %d bytes are written", in.Path, len(in.Content), MaxFileBytes)
	}
	fi, err := os.Stat(real)
	created := errors.Is(err, fs.ErrNotExist)
	if err == nil && fi.IsDir() {
		return nil, WriteFileOutput{}, fmt.Errorf("path %q is a directory", in.Path)
	}
	if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
		return nil, WriteFileOutput{}, fmt.Errorf("path %q: creating its directory: %w", in.Path, unwrapPath(err))
	}
	if err := writeKeepingMode(real, []byte(in.Content)); err != nil {
		return nil, WriteFileOutput{}, fmt.Errorf("path %q: %w", in.Path, unwrapPath(err))
	}
	out := WriteFileOutput{Path: t.display(real), Bytes: len(in.Content), Created: created}
	verb := "Wrote"
	if created {
		verb = "Created"
	}
	return text(fmt.Sprintf("%s %s (%d bytes)", verb, out.Path, out.Bytes)), out, nil
}

// writeKeepingMode writes b to the file at real, keeping its permissions if
// it exists (0644 otherwise).
func writeKeepingMode(real string, b []byte) error {
	mode := fs.FileMode(0o644)
	if fi, err := os.Stat(real); err == nil {
		mode = fi.Mode().Perm()
	}
	return os.WriteFile(real, b, mode)
}

func (t *tools) editFile(_ context.Context, _ *mcp.CallToolRequest, in EditFileInput) (*mcp.CallToolResult, EditFileOutput, error) {
	real, err := t.resolve(in.Path)
	if err != nil {
		return nil, EditFileOutput{}, err
	}
	if in.OldText == "" {
		return nil, EditFileOutput{}, fmt.Errorf("old_text for %q: must not be empty (use write_file to create a file)", in.Path)
	}
	b, err := readText(real, in.Path)
	if err != nil {
		return nil, EditFileOutput{}, err
	}
	s := string(b)
	n := strings.Count(s, in.OldText)
	switch {
	case n == 0:
		return nil, EditFileOutput{}, fmt.Errorf("old_text was not found in %q: it must match the file exactly, including white space", in.Path)
	case n > 1 && !in.ReplaceAll:
		return nil, EditFileOutput{}, fmt.Errorf("old_text occurs %d times in %q: give more context so that it occurs once, or set replace_all", n, in.Path)
	}
	if in.ReplaceAll {
		s = strings.ReplaceAll(s, in.OldText, in.NewText)
	} else {
		s = strings.Replace(s, in.OldText, in.NewText, 1)
	}
	if len(s) > MaxFileBytes {
		return nil, EditFileOutput{}, fmt.Errorf("editing %q would make it %d bytes: at most %d bytes are written", in.Path, len(s), MaxFileBytes)
	}
	if err := writeKeepingMode(real, []byte(s)); err != nil {
		return nil, EditFileOutput{}, fmt.Errorf("path %q: %w", in.Path, unwrapPath(err))
	}
	out := EditFileOutput{Path: t.display(real), Replacements: n}
	return text(fmt.Sprintf("Edited %s (%d replacement(s))", out.Path, n)), out, nil
}

func (t *tools) listDirectory(_ context.Context, _ *mcp.CallToolRequest, in ListDirectoryInput) (*mcp.CallToolResult, ListDirectoryOutput, error) {
	real, err := t.resolve(in.Path)
	if err != nil {
		return nil, ListDirectoryOutput{}, err
	}
	des, err := os.ReadDir(real)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, ListDirectoryOutput{}, fmt.Errorf("path %q: no such directory", in.Path)
		}
		return nil, ListDirectoryOutput{}, fmt.Errorf("path %q: %w", in.Path, unwrapPath(err))
	}
	out := ListDirectoryOutput{Path: t.display(real), Entries: []Entry{}}
	var sb strings.Builder
	for i, de := range des {
		if i == MaxEntries {
			out.Truncated = true
			fmt.Fprintf(&sb, "[%d more entries left out]\n", len(des)-i)
			break
		}
		e := Entry{Name: de.Name(), Type: "other"}
		switch {
		case de.Type()&fs.ModeSymlink != 0:
			e.Type = "symlink"
		case de.IsDir():
			e.Type = "dir"
		case de.Type().IsRegular():
			e.Type = "file"
		}
		if info, err := de.Info(); err == nil && e.Type == "file" {
			e.Size = info.Size()
		}
		out.Entries = append(out.Entries, e)
		switch e.Type {
		case "dir":
			fmt.Fprintf(&sb, "%s/\n", e.Name)
		case "file":
			fmt.Fprintf(&sb, "%s (%d bytes)\n", e.Name, e.Size)
		default:
			fmt.Fprintf(&sb, "%s (%s)\n", e.Name, e.Type)
		}
	}
	if len(des) == 0 {
		sb.WriteString("(empty directory)")
	}
	return text(sb.String()), out, nil
}

func (t *tools) searchFiles(ctx context.Context, _ *mcp.CallToolRequest, in SearchFilesInput) (*mcp.CallToolResult, SearchFilesOutput, error) {
	if in.Pattern == "" {
		return nil, SearchFilesOutput{}, errors.New("pattern: must be a non-empty glob (\"**/*\" for every file)")
	}
	if _, err := path.Match(strings.ReplaceAll(in.Pattern, "**", "*"), ""); err != nil {
		return nil, SearchFilesOutput{}, fmt.Errorf("pattern %q: %v", in.Pattern, err)
	}
	var re *regexp.Regexp
	if in.Regex != "" {
		var err error
		if re, err = regexp.Compile(in.Regex); err != nil {
			return nil, SearchFilesOutput{}, fmt.Errorf("regex %q: %v", in.Regex, err)
		}
	}
	dir := in.Path
	if dir == "" {
		dir = "."
	}
	real, err := t.resolve(dir)
	if err != nil {
		return nil, SearchFilesOutput{}, err
	}
	var out SearchFilesOutput
	scanned := 0
	stop := errors.New("stop")
	err = filepath.WalkDir(real, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable entries are skipped
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if de.IsDir() {
			if de.Name() == ".git" && p != real {
				return filepath.SkipDir
			}
			return nil
		}
		if !de.Type().IsRegular() { // symbolic links are not followed
			return nil
		}
		if scanned++; scanned > MaxScannedFiles {
			out.Truncated = true
			return stop
		}
		rel, _ := filepath.Rel(real, p)
		rel = filepath.ToSlash(rel)
		if !matchGlob(in.Pattern, rel) {
			return nil
		}
		shown := t.display(p)
		if re == nil {
			if len(out.Files) == MaxMatches {
				out.Truncated = true
				return stop
			}
			out.Files = append(out.Files, shown)
			return nil
		}
		if info, err := de.Info(); err != nil || info.Size() > MaxFileBytes {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil || isBinary(b) {
			return nil
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, MaxFileBytes)
		for n := 1; sc.Scan(); n++ {
			if !re.Match(sc.Bytes()) {
				continue
			}
			if len(out.Lines) == MaxMatches {
				out.Truncated = true
				return stop
			}
			line := sc.Text()
			if len(line) > maxLineChars {
				line = line[:maxLineChars] + "… [line cut]"
			}
			out.Lines = append(out.Lines, fmt.Sprintf("%s:%d:%s", shown, n, line))
		}
		return nil
	})
	if err != nil && !errors.Is(err, stop) {
		return nil, SearchFilesOutput{}, err
	}
	list := out.Files
	if re != nil {
		list = out.Lines
	}
	msg := strings.Join(list, "\n")
	if len(list) == 0 {
		msg = "no matches"
	}
	if out.Truncated {
		msg += fmt.Sprintf("\n[results capped at %d matches or %d files scanned; narrow the pattern or path]", MaxMatches, MaxScannedFiles)
	}
	return text(msg), out, nil
}

// matchGlob matches a slash-separated relative path against pattern: a
// pattern without "/" matches the base name; otherwise segment by segment,
// "**" matching any number of segments.
func matchGlob(pattern, rel string) bool {
	if !strings.Contains(pattern, "/") {
		ok, _ := path.Match(pattern, path.Base(rel))
		return ok
	}
	return matchSegs(strings.Split(pattern, "/"), strings.Split(rel, "/"))
}

func matchSegs(pat, segs []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(segs); i++ {
				if matchSegs(pat[1:], segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], segs[0]); !ok {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return len(segs) == 0
}

package builtin

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// maxLineChars is where read_file and search_files cut a long line.
const maxLineChars = 2000

// binarySniff is how much of a file is checked for a NUL byte.
const binarySniff = 8 << 10

// scanCheck is how many lines search_files scans in a file between two
// looks at the context.
const scanCheck = 1024

// ReadFileInput is read_file's arguments.
type ReadFileInput struct {
	Path   string `json:"path" jsonschema:"the file, relative to the session directory, or absolute inside it or an additional directory"`
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
	Path    string `json:"path" jsonschema:"the file, relative to the session directory, or absolute inside it or an additional directory"`
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
	Path       string `json:"path" jsonschema:"the file, relative to the session directory, or absolute inside it or an additional directory"`
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
	Path string `json:"path" jsonschema:"the directory, relative to the session directory (\".\" for itself), or absolute inside it or an additional directory"`
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
	Path    string `json:"path,omitempty" jsonschema:"the directory to search (default: the session directory); relative to it, or absolute inside it or an additional directory"`
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

func isBinary(b []byte) bool {
	return bytes.IndexByte(b[:min(len(b), binarySniff)], 0) >= 0
}

func (t *tools) readFile(ctx context.Context, _ *mcp.CallToolRequest, in ReadFileInput) (*mcp.CallToolResult, ReadFileOutput, error) {
	tgt, err := t.resolve(in.Path)
	if err != nil {
		return nil, ReadFileOutput{}, err
	}
	if in.Offset < 0 || in.Limit < 0 {
		return nil, ReadFileOutput{}, fmt.Errorf("offset %d, limit %d: must not be negative", in.Offset, in.Limit)
	}
	// The whole text is read, from the editor too, so that the limits, the
	// line cuts and the line count are the same whatever the source.
	s, err := t.readText(ctx, tgt)
	if err != nil {
		return nil, ReadFileOutput{}, err
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	start := max(in.Offset, 1)
	limit := in.Limit
	if limit == 0 || limit > MaxReadLines {
		limit = MaxReadLines
	}
	out := ReadFileOutput{Path: t.display(tgt.abs), TotalLines: len(lines), StartLine: start}
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
	return withShow(text(msg), gateway.Show{Locations: []gateway.Location{{Path: tgt.abs, Line: start}}}), out, nil
}

func (t *tools) writeFile(ctx context.Context, _ *mcp.CallToolRequest, in WriteFileInput) (*mcp.CallToolResult, WriteFileOutput, error) {
	tgt, err := t.resolve(in.Path)
	if err != nil {
		return nil, WriteFileOutput{}, err
	}
	if err := t.needEditor(fmt.Sprintf("write %q", in.Path), methodWrite); err != nil {
		return nil, WriteFileOutput{}, err
	}
	if len(in.Content) > MaxFileBytes {
		return nil, WriteFileOutput{}, fmt.Errorf("content for %q is %d bytes: at most %d bytes are written", in.Path, len(in.Content), MaxFileBytes)
	}
	if fi, err := t.statLocal(tgt); err == nil && fi.IsDir() {
		return nil, WriteFileOutput{}, fmt.Errorf("path %q is a directory", in.Path)
	}
	// The text before, for the diff: the editor's when it reads. A file
	// missing from both is created; one whose text cannot be had (binary,
	// too large, an editor error; with editorOnly any failed read, as the
	// disk cannot tell a missing file) is overwritten and shown without a
	// diff.
	var before *string
	created, diff := false, true
	switch old, err := t.readText(ctx, tgt); {
	case err == nil:
		before = &old
	case errors.Is(err, errNoFile):
		created = true
	case ctx.Err() != nil:
		return nil, WriteFileOutput{}, context.Cause(ctx)
	default:
		diff = false
	}
	if err := t.writeText(ctx, tgt, in.Content); err != nil {
		return nil, WriteFileOutput{}, err
	}
	out := WriteFileOutput{Path: t.display(tgt.abs), Bytes: len(in.Content), Created: created}
	verb := "Wrote"
	if created {
		verb = "Created"
	}
	sh := gateway.Show{Locations: []gateway.Location{{Path: tgt.abs}}}
	if before != nil {
		sh.Locations[0].Line = firstChange(*before, in.Content)
	}
	if diff {
		sh.Diffs = []gateway.Diff{{Path: tgt.abs, OldText: before, NewText: in.Content}}
	}
	return withShow(text(fmt.Sprintf("%s %s (%d bytes)", verb, out.Path, out.Bytes)), sh), out, nil
}

func (t *tools) editFile(ctx context.Context, _ *mcp.CallToolRequest, in EditFileInput) (*mcp.CallToolResult, EditFileOutput, error) {
	tgt, err := t.resolve(in.Path)
	if err != nil {
		return nil, EditFileOutput{}, err
	}
	if err := t.needEditor(fmt.Sprintf("edit %q", in.Path), methodRead, methodWrite); err != nil {
		return nil, EditFileOutput{}, err
	}
	if in.OldText == "" {
		return nil, EditFileOutput{}, fmt.Errorf("old_text for %q: must not be empty (use write_file to create a file)", in.Path)
	}
	before, err := t.readText(ctx, tgt)
	if err != nil {
		return nil, EditFileOutput{}, err
	}
	first := strings.Index(before, in.OldText)
	n := strings.Count(before, in.OldText)
	switch {
	case n == 0:
		return nil, EditFileOutput{}, fmt.Errorf("old_text was not found in %q: it must match the file exactly, including white space", in.Path)
	case n > 1 && !in.ReplaceAll:
		return nil, EditFileOutput{}, fmt.Errorf("old_text occurs %d times in %q: give more context so that it occurs once, or set replace_all", n, in.Path)
	}
	var after string
	if in.ReplaceAll {
		after = strings.ReplaceAll(before, in.OldText, in.NewText)
	} else {
		after = strings.Replace(before, in.OldText, in.NewText, 1)
	}
	if len(after) > MaxFileBytes {
		return nil, EditFileOutput{}, fmt.Errorf("editing %q would make it %d bytes: at most %d bytes are written", in.Path, len(after), MaxFileBytes)
	}
	if err := t.writeText(ctx, tgt, after); err != nil {
		return nil, EditFileOutput{}, err
	}
	out := EditFileOutput{Path: t.display(tgt.abs), Replacements: n}
	sh := gateway.Show{
		Diffs:     []gateway.Diff{{Path: tgt.abs, OldText: &before, NewText: after}},
		Locations: []gateway.Location{{Path: tgt.abs, Line: lineAt(before, first)}},
	}
	return withShow(text(fmt.Sprintf("Edited %s (%d replacement(s))", out.Path, n)), sh), out, nil
}

// listDirectory is list_directory: the entries of the directory, read in
// its root (readDirIn); ending ctx ends it.
func (t *tools) listDirectory(ctx context.Context, _ *mcp.CallToolRequest, in ListDirectoryInput) (*mcp.CallToolResult, ListDirectoryOutput, error) {
	tgt, err := t.resolve(in.Path)
	if err != nil {
		return nil, ListDirectoryOutput{}, err
	}
	des, err := readDirIn(ctx, tgt.root, tgt.rel)
	if err != nil {
		return nil, ListDirectoryOutput{}, t.dirError(ctx, tgt, err)
	}
	out := ListDirectoryOutput{Path: t.display(tgt.abs), Entries: []Entry{}}
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

// dirError is the tool error of readDirIn or walk failing on the directory
// tgt with err.
func (t *tools) dirError(ctx context.Context, tgt target, err error) error {
	if cause := context.Cause(ctx); cause != nil {
		return cause
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("path %q: no such directory", tgt.name)
	case errors.Is(err, errNotDir):
		return fmt.Errorf("path %q is not a directory: use read_file", tgt.name)
	}
	return t.localError(tgt, err)
}

// searchFiles is search_files: a walk of the directory in its root (walk),
// reading the matching files in it too (readLocal). Ending ctx ends the
// walk, between two entries or within a file every scanCheck lines, with
// the context's cause.
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
	tgt, err := t.resolve(dir)
	if err != nil {
		return nil, SearchFilesOutput{}, err
	}
	var out SearchFilesOutput
	scanned := 0
	stop := errors.New("stop")
	err = walk(ctx, tgt.root, tgt.rel, func(sub string, de fs.DirEntry) error {
		if de.IsDir() {
			if de.Name() == ".git" {
				return fs.SkipDir
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
		if !matchGlob(in.Pattern, sub) {
			return nil
		}
		rel := filepath.Join(tgt.rel, filepath.FromSlash(sub))
		shown := t.display(filepath.Join(tgt.base, rel))
		if re == nil {
			if len(out.Files) == MaxMatches {
				out.Truncated = true
				return stop
			}
			out.Files = append(out.Files, shown)
			return nil
		}
		b, err := t.readLocal(target{name: shown, root: tgt.root, base: tgt.base, rel: rel})
		if err != nil { // not regular, too large, binary or unreadable: skipped
			return nil
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, MaxFileBytes)
		for n := 1; sc.Scan(); n++ {
			if n%scanCheck == 0 {
				if err := context.Cause(ctx); err != nil {
					return err
				}
			}
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
		return nil, SearchFilesOutput{}, t.dirError(ctx, tgt, err)
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

// matchSegs reports whether the path segments segs match the pattern
// segments pat ("**" matching any number of segments). It is a dynamic
// program over (pattern, path) positions, so a pattern of many "**" is
// matched in O(len(pat) × len(segs)) steps, never by backtracking.
func matchSegs(pat, segs []string) bool {
	// ok[j] says pat[i:] matches segs[j:], for the i of the loop, from the
	// end of the pattern backwards.
	ok := make([]bool, len(segs)+1)
	ok[len(segs)] = true // the empty pattern matches only the empty rest
	for i := len(pat) - 1; i >= 0; i-- {
		next := ok
		ok = make([]bool, len(segs)+1)
		if pat[i] == "**" {
			// ** matches segs[j:k] for any k ≥ j: ok[j] = next[j] || ok[j+1].
			for j := len(segs); j >= 0; j-- {
				ok[j] = next[j] || (j < len(segs) && ok[j+1])
			}
			continue
		}
		for j := range segs {
			if next[j+1] {
				m, _ := path.Match(pat[i], segs[j])
				ok[j] = m
			}
		}
	}
	return ok[0]
}

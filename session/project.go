package session

// The project's .mcp.json: servers a repository declares for everyone who
// works in it (Claude Code's format), which run only once the user has
// approved them for the project.

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// ProjectFile is the name of a project's server file in the session's cwd.
const ProjectFile = ".mcp.json"

// maxProjectFile bounds the size of a .mcp.json read (1 MiB).
const maxProjectFile = 1 << 20

// readProject reads dir's .mcp.json: {"mcpServers": {NAME: ENTRY}} with
// entries as bridge.ParseServerEntry reads them, sorted by name. No file
// is no servers; an unreadable file or a bad entry is an error naming
// the file and the entry (the other entries are returned).
func readProject(dir string) ([]bridge.ServerSpec, error) {
	path := filepath.Join(dir, ProjectFile)
	// O_NONBLOCK: a FIFO put there opens at once (and is refused below)
	// instead of holding the session's open until someone writes to it.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || fi.Size() > maxProjectFile {
		return nil, fmt.Errorf("%s: not a regular file of at most %d bytes", path, maxProjectFile)
	}
	var doc struct {
		MCPServers map[string]json.RawMessage `json:"mcpServers"`
	}
	if err := json.NewDecoder(f).Decode(&doc); err != nil {
		return nil, fmt.Errorf("%s: %v (want {\"mcpServers\": {\"name\": {\"command\": …}}})", path, err)
	}
	var specs []bridge.ServerSpec
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(doc.MCPServers)) {
		spec, err := bridge.ParseServerEntry(name, doc.MCPServers[name])
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: mcpServers.%s: %w", path, name, err))
			continue
		}
		specs = append(specs, spec)
	}
	return specs, errors.Join(errs...)
}

// fingerprint identifies a project server's entry as written: an approval
// holds for that entry, and a changed command, URL or value asks again.
func fingerprint(spec bridge.ServerSpec) string {
	b, _ := json.Marshal(struct {
		T, C, U string
		A       []string
		E       any
		H       any
	}{string(spec.Transport), spec.Command, spec.URL, spec.Args, spec.Env, spec.Headers})
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Approvals remembers which projects' .mcp.json servers the user approved:
// a JSON file ({"projects": {DIR: {NAME: FINGERPRINT}}}, mode 0600, written
// by rename), read again at each use so that every agent process sharing
// it agrees. Create it with NewApprovals; its methods are safe for
// concurrent use.
type Approvals struct {
	path string
	mu   sync.Mutex
}

// NewApprovals returns the Approvals kept in the file at path (created on
// the first approval, with its directory).
func NewApprovals(path string) *Approvals { return &Approvals{path: path} }

// Path is the file the approvals are kept in.
func (a *Approvals) Path() string { return a.path }

type approvalsFile struct {
	Projects map[string]map[string]string `json:"projects"`
}

func (a *Approvals) read() (approvalsFile, error) {
	var f approvalsFile
	b, err := os.ReadFile(a.path)
	if errors.Is(err, fs.ErrNotExist) {
		return approvalsFile{Projects: map[string]map[string]string{}}, nil
	}
	if err != nil {
		return f, err
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return f, fmt.Errorf("%s: %w", a.path, err)
	}
	if f.Projects == nil {
		f.Projects = map[string]map[string]string{}
	}
	return f, nil
}

func (a *Approvals) write(f approvalsFile) error {
	if err := os.MkdirAll(filepath.Dir(a.path), 0o700); err != nil {
		return err
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(a.path), ".projects-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), a.path)
}

// Approved returns the servers of specs that were approved for project
// dir as they are written now, by name (one read of the file).
func (a *Approvals) Approved(dir string, specs []bridge.ServerSpec) map[string]bool {
	a.mu.Lock()
	f, err := a.read()
	a.mu.Unlock()
	ok := make(map[string]bool)
	if err != nil {
		return ok
	}
	for _, s := range specs {
		if fp, found := f.Projects[dir][s.Name]; found && fp == fingerprint(s) {
			ok[s.Name] = true
		}
	}
	return ok
}

// Approve remembers specs as approved for project dir.
func (a *Approvals) Approve(dir string, specs []bridge.ServerSpec) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	f, err := a.read()
	if err != nil {
		return err
	}
	p := f.Projects[dir]
	if p == nil {
		p = map[string]string{}
		f.Projects[dir] = p
	}
	for _, s := range specs {
		p[s.Name] = fingerprint(s)
	}
	return a.write(f)
}

// Revoke forgets every approval of project dir and reports whether there
// was one.
func (a *Approvals) Revoke(dir string) (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f, err := a.read()
	if err != nil {
		return false, err
	}
	if _, ok := f.Projects[dir]; !ok {
		return false, nil
	}
	delete(f.Projects, dir)
	return true, a.write(f)
}

// describe is one line saying what a server runs or reaches.
func describe(spec bridge.ServerSpec) string {
	switch spec.Transport {
	case bridge.TransportStdio:
		what := "runs `" + strings.Join(append([]string{spec.Command}, spec.Args...), " ") + "`"
		var env []string
		for _, v := range spec.Env {
			env = append(env, shownPair(v.Name, v.Value))
		}
		if len(env) > 0 {
			what += " with env " + strings.Join(env, ", ")
		}
		return what
	default:
		what := fmt.Sprintf("connects to %s (%s)", spec.URL, spec.Transport)
		var headers []string
		for _, h := range spec.Headers {
			headers = append(headers, shownPair(h.Name, h.Value))
		}
		if len(headers) > 0 {
			what += " with headers " + strings.Join(headers, ", ")
		}
		return what
	}
}

// shownPair is an env or header entry as the user is asked about it: its
// value when it reads the agent's environment (${VAR}: which variables a
// server gets), else only its name.
func shownPair(name, value string) string {
	if varRef.MatchString(value) {
		return name + "=" + value
	}
	return name
}

// PendingProjectText says which servers of the project's .mcp.json wait for
// the user's approval, and when they are asked for.
func PendingProjectText(dir string, pending []bridge.ServerSpec) string {
	var b strings.Builder
	fmt.Fprintf(&b, "This project's %s offers %d MCP servers that you have not approved:", filepath.Join(dir, ProjectFile), len(pending))
	for _, s := range pending {
		fmt.Fprintf(&b, "\n- %s: %s", s.Name, describe(s))
	}
	b.WriteString("\nYou are asked at your next prompt whether they may run; /mcp approve asks now.")
	return b.String()
}

// askProject asks the user whether the project's pending servers may run,
// as a permission question shown as a tool call of the turn; approved,
// they connect (remembered for the project when always), and the call's
// result says how each went. Rejected, they are not asked again in this
// session. It reports false when the turn was cancelled meanwhile.
func (s *Session) askProject(ctx context.Context, ask gateway.AskFunc, emit func(gateway.Event)) bool {
	s.srvMu.Lock()
	pending := slices.Clone(s.pending)
	s.srvMu.Unlock()
	if len(pending) == 0 || ask == nil {
		return true
	}
	var id [6]byte
	_, _ = rand.Read(id[:])
	names := make([]any, len(pending))
	var b strings.Builder
	fmt.Fprintf(&b, "%s asks to run these MCP servers:", filepath.Join(s.cwd, ProjectFile))
	for i, p := range pending {
		names[i] = p.Name
		fmt.Fprintf(&b, "\n- %s: %s", p.Name, describe(p))
	}
	b.WriteString("\nThey run with your permissions, confined by the session's mode.")
	call := gateway.ToolCallEvent{ID: "project_servers_" + hex.EncodeToString(id[:]), Name: "project_servers",
		Title: "Run the MCP servers of this project's .mcp.json", Kind: gateway.ToolKindExecute,
		RawInput: map[string]any{"file": filepath.Join(s.cwd, ProjectFile), "servers": names}, Status: gateway.ToolPending}
	emit(gateway.Event{Kind: gateway.EventToolStart, Call: &call})
	out, err := ask(ctx, gateway.PermissionRequest{Call: call, Content: []gateway.Content{gateway.TextContent(b.String())},
		Always: "Always allow this project's servers"})
	end := func(status gateway.ToolStatus, text string) {
		c := call
		c.Status = status
		res := gateway.Result{Content: []gateway.Content{gateway.TextContent(text)}, IsError: status == gateway.ToolFailed}
		c.Result = &res
		emit(gateway.Event{Kind: gateway.EventToolEnd, Call: &c})
	}
	switch {
	case err != nil || out == gateway.PermissionCancelled:
		end(gateway.ToolFailed, "Not answered: the project's servers wait for the next prompt.")
		return ctx.Err() == nil
	case out == gateway.PermissionReject || out == gateway.PermissionUnavailable:
		s.srvMu.Lock()
		s.pending = nil
		s.srvMu.Unlock()
		end(gateway.ToolFailed, "Declined: the project's servers do not run in this session. You are asked again in the next session; /mcp approve asks again now.")
		return true
	}
	text := s.approveProject(ctx, pending, out == gateway.PermissionAllowAlways)
	end(gateway.ToolCompleted, text)
	return ctx.Err() == nil
}

// approveProject connects the approved pending servers (remembering them
// when always) and says how each went.
func (s *Session) approveProject(ctx context.Context, pending []bridge.ServerSpec, always bool) string {
	var b strings.Builder
	if always {
		if err := s.core.opts.ProjectApprovals.Approve(s.cwd, pending); err != nil {
			fmt.Fprintf(&b, "Remembering the approval failed (%v): you will be asked again.\n", err)
		} else {
			fmt.Fprintf(&b, "Approved for %s (kept in %s; /mcp revoke forgets it).\n", s.cwd, s.core.opts.ProjectApprovals.Path())
		}
	}
	s.srvMu.Lock()
	defer s.srvMu.Unlock()
	s.pending = nil
	for _, p := range pending {
		ch := s.add(ctx, p, OriginProject)
		b.WriteString(ChangeText(ch) + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// revokeProject forgets the project's approval and removes its servers
// from the session.
func (s *Session) revokeProject(ctx context.Context) string {
	a := s.core.opts.ProjectApprovals
	if a == nil {
		return "This agent does not read projects' .mcp.json files."
	}
	had, err := a.Revoke(s.cwd)
	if err != nil {
		return fmt.Sprintf("Forgetting the approval failed: %v.", err)
	}
	s.srvMu.Lock()
	var removed []string
	for name, o := range s.origins {
		if o == OriginProject && s.drop(name) == nil {
			removed = append(removed, name)
		}
	}
	s.saveChanges(ctx)
	s.srvMu.Unlock()
	slices.Sort(removed)
	switch {
	case len(removed) > 0:
		return fmt.Sprintf("Forgot the approval of %s's servers and stopped %s; the next session asks again.", s.cwd, strings.Join(removed, ", "))
	case had:
		return fmt.Sprintf("Forgot the approval of %s's servers; the next session asks again.", s.cwd)
	}
	return fmt.Sprintf("No approval of %s's servers was kept.", s.cwd)
}

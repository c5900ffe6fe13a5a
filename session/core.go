package session

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/editor"
	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
	"github.com/seed02d3eb6b/acp-agent/internal/defaults"
	"github.com/seed02d3eb6b/acp-agent/internal/textsafe"
	"github.com/seed02d3eb6b/acp-agent/sandbox/confine"
	"github.com/seed02d3eb6b/acp-agent/sandbox/quota"
	"github.com/seed02d3eb6b/acp-agent/session/store"
	"github.com/seed02d3eb6b/acp-agent/session/store/memory"
	"github.com/seed02d3eb6b/acp-agent/signin"
)

// Errors of the session core. Front ends map them to their own protocol's
// errors (acp: toRequestError).
var (
	// ErrInvalid marks a request the caller got wrong: a cwd that is not an
	// absolute path to a directory, too many servers, an unknown model.
	// Such errors are *InvalidError (made by Invalidf), whose text is the
	// cause alone: errors.Is(err, ErrInvalid) tells the class, and the front
	// end writes its own title ("Invalid params: …").
	ErrInvalid = errors.New("invalid params")
	// ErrClosed: the Core is shutting down and opens no more sessions.
	ErrClosed = errors.New("agent is shutting down")
	// ErrEnded: the session has ended; it runs no more turns.
	ErrEnded = errors.New("the session was closed")
)

// InvalidError is a request the caller got wrong; Reason says what and
// the rule it broke ("cwd \"x\" must be an absolute path"). It is
// ErrInvalid to errors.Is.
type InvalidError struct{ Reason string }

func (e *InvalidError) Error() string { return e.Reason }

// Is reports whether target is ErrInvalid.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// Invalidf returns an *InvalidError whose Reason is fmt.Sprintf(format,
// args...).
func Invalidf(format string, args ...any) error {
	return &InvalidError{Reason: fmt.Sprintf(format, args...)}
}

// KeyInUseError is the error of Open when a live session already uses the
// gateway key Key. It wraps ErrInvalid.
type KeyInUseError struct{ Key string }

func (e *KeyInUseError) Error() string {
	return fmt.Sprintf("gateway session key %q is already used by a live session", e.Key)
}

// Unwrap returns ErrInvalid.
func (e *KeyInUseError) Unwrap() error { return ErrInvalid }

// CoreOptions configure a Core; the zero value is valid.
type CoreOptions struct {
	// Name and Version are the MCP clientInfo sent to servers. Empty means
	// "acp-agent" and "dev".
	Name, Version string
	// Gateway runs the turns and holds each session's bridged tools. Nil
	// means an in-process gateway with the direct provider over History
	// (runner.NewLocal).
	Gateway gateway.Gateway
	// Bridge is the template of each session's bridge.Manager options; Cwd,
	// StdioDir, ClientInfo, Logger and OnToolsChanged are set per session.
	// Bridge.Limits also holds the servers-per-session quota. Of
	// Bridge.Confine, Require and Support are kept, Mode and Workspace set
	// per session (its mode, its directories and private temp directory).
	Bridge bridge.Options
	// DefaultMode is the mode of a session that never chose one (config
	// sandbox.mode; a stored choice wins). "" means full access: nothing
	// is confined (acp-agent's config defaults to workspace-write).
	DefaultMode confine.Mode
	// DefaultServers are connected in every session, merged with the
	// session's own list: a session entry with the same name replaces the
	// default one.
	DefaultServers []bridge.ServerSpec
	// ServerSettings are per-server settings by server name; an entry's own
	// timeouts and rate limit win over them.
	ServerSettings map[string]ServerSettings
	// InProcess are MCP servers of this process, built for each session and
	// connected before the default and session servers over the go-sdk's
	// in-memory transports, bridged like any other ("mcp__<Name>__<tool>").
	// Their names are taken: a default or session server of the same name
	// is refused (ErrInvalid). They do not count toward the
	// servers-per-session quota.
	InProcess []InProcessServer
	// ProjectApprovals, if set, makes a session read the project's
	// .mcp.json in its cwd (Claude Code's format; not with RemoteClients):
	// its servers join the session once the user approved them for the
	// project (asked at the next prompt, remembered here when always);
	// the client's servers and the ones its user added win a name clash,
	// and the project's win over the config's. Nil: no .mcp.json is read.
	ProjectApprovals *Approvals
	// LookupEnv reads the agent's environment for the ${VAR} references
	// of the project's servers and of those added by /mcp (see
	// Session.AddServer); it may refuse a variable (the agent's own
	// secrets) by reporting it unset. Nil means os.LookupEnv.
	LookupEnv func(name string) (string, bool)
	// Store keeps sessions across restarts. Nil means memory.New().
	Store store.Store
	// History is the gateway's conversation history over Store; each opened
	// session is attached to it. Nil means NewHistory(Store, Logger); a
	// Gateway built by the caller should then share the History it uses.
	History *History
	// Observer, if set, is told of sessions opened and closed, of
	// servers' sign-ins and of the turns' leases (metrics); it must not
	// block.
	Observer Observer
	// Leases, if set, make this Core one replica of a fleet whose replicas
	// share Store (and one process's Cores, with store.LocalLeases): each
	// prompt turn (Session.Prompt) runs under the session's lease, so one
	// replica at a time runs a turn of a session, and Open and Core.Delete
	// take it too; see "Leases" in the package doc. With a
	// store.FencedStore, Leases must be the store's own (its tokens are
	// the ones it fences by). Nil: no leases and no store round trips for
	// them (one process serves its sessions alone: the stdio agent).
	Leases store.Leases
	// Replica is this Core's name as a lease holder, which the user of
	// another replica is told ("session X is running a turn on <Replica>").
	// Empty means "this process".
	Replica string
	// OpenLeaseWait bounds how long Open waits for the lease of a session
	// that another holder runs a turn of (Leases) before it opens the
	// session without it. Zero means 10 s; negative means no wait.
	OpenLeaseWait time.Duration
	// RemoteClients says that the sessions' clients are on other machines
	// (a network gateway's): a session's cwd and additionalDirectories are
	// paths on the client's machine, so Open checks only that they are
	// absolute, and its stdio MCP servers (commands the operator allowed)
	// start in a private temporary directory of the session's (mode 0700,
	// made at open, removed when the session ends) instead of the cwd. The
	// servers' roots, InProcessEnv and the model's system prompt keep the
	// client's paths. False: the client is on this machine, and the cwd
	// must be an existing directory here.
	RemoteClients bool
	// Tenant is the tenant of a shared gateway whose sessions this Core
	// runs (cmd/acp-agent's gateway builds one Core per tenant, over the
	// tenant's view of the store, store.ForTenant); "" for a local agent
	// and the gateway's default tenant. Every turn's request carries it
	// (gateway.SendRequest.Tenant) for the runner's traces and audit log.
	// It names the tenant; it keeps nothing apart (Store does).
	Tenant string
	// Logger receives the core's logs. Nil discards them.
	Logger *slog.Logger
}

// ServerSettings are the settings for the MCP server of one name (the
// config file's "servers").
type ServerSettings struct {
	// Timeouts override the global timeouts; zero fields inherit.
	Timeouts bridge.Timeouts
	// CallsPerMinute overrides the global rate limit; zero inherits,
	// negative means no limit.
	CallsPerMinute int
	// OAuth is the server's pre-registered OAuth client, for an entry that
	// has none of its own.
	OAuth signin.Client
	// Sandbox is a stdio server's own confinement rules, within the
	// session's mode (config servers.<name>.sandbox).
	Sandbox confine.Server
}

// InProcessServer is one in-process MCP server of every session: New is
// called at each open with the session's environment and returns the
// server, or nil to leave it out of that session. New may be called
// concurrently. [bridge.ReservedServerName] ("acp") is the name of the
// agent's built-in tools (see package bridge/builtin).
type InProcessServer struct {
	Name string
	New  func(InProcessEnv) *mcp.Server
	// Timeouts override the bridge's timeouts for this server (a tool
	// that bounds its own run, like run_command, needs a longer call
	// timeout); zero fields inherit.
	Timeouts bridge.Timeouts
	// Lazy says that the server's tools do not depend on the InProcessEnv
	// and never change (no tools/list_changed), and that it serves no
	// resources or prompts: the Core then lists its tools once per process
	// and each session connects it for the calls of its tools, closing the
	// connection when the last call under way ends
	// (bridge.ServerSpec.ToolsKey), so that an idle session holds no
	// connection to it. New is then called on first use (and to list the
	// tools), not at open, and must not return nil. False builds and
	// connects it at every open.
	Lazy bool
}

// InProcessEnv is what an in-process server of one session is built with.
type InProcessEnv struct {
	// SessionID is the session's ID.
	SessionID string
	// Cwd is the session's working directory, an absolute path to a
	// directory; AdditionalDirectories are the other directories the
	// client gave the session (ACP additionalDirectories), absolute too.
	Cwd                   string
	AdditionalDirectories []string
	// Editor is the session's editor (ACP fs/* and terminal/*), or nil when
	// the front end has none.
	Editor editor.Editor
	// Confine is the session's confinement, for the processes an
	// in-process server starts (run_command): its mode as it changes, its
	// workspace and private temp directory (set by the time a tool runs).
	Confine *bridge.Confine
}

// turnWait bounds how long ending a session waits for its cancelled turn.
const turnWait = 5 * time.Second

// Core opens, runs and ends live sessions for a front end. Create it with
// NewCore. Its methods are safe for concurrent use.
type Core struct {
	opts    CoreOptions
	gw      gateway.Gateway
	store   store.Store
	history *History
	log     *slog.Logger
	// toolLists holds the tool lists of the Lazy in-process servers, by
	// name, for every session (bridge.Options.ToolLists).
	toolLists bridge.ToolLists

	// mu guards the fields below. It is never held together with a
	// Session's locks, nor across I/O.
	mu sync.Mutex
	// sessions are the live sessions by ID; keys are their gateway keys.
	// Invariant: keys[s.key] is true exactly when sessions[s.id] == s for
	// some s.
	sessions map[string]*Session
	keys     map[string]bool
	// ending are the instances no longer live whose End is still tearing
	// down (its servers, its tools and history by key), by key: an Open of
	// the same key waits for it, or that teardown would clear the new
	// instance's tools and history (a session reopened by another
	// connection while the old one's connection ends it).
	ending  map[string]*Session
	closing bool // Shutdown has begun: Open fails with ErrClosed
	// waitingForEnd, if set (tests), is called when an Open waits for an
	// ending instance of its key.
	waitingForEnd func()
}

// NewCore returns a Core. opts may be nil (every default); it is copied.
func NewCore(o *CoreOptions) *Core {
	var opts CoreOptions
	if o != nil {
		opts = *o
	}
	defaults.Implementation(&opts.Name, &opts.Version, &opts.Logger)
	if opts.Store == nil {
		opts.Store = memory.New()
	}
	if opts.History == nil {
		opts.History = NewHistory(opts.Store, opts.Logger)
	}
	if opts.Gateway == nil {
		opts.Gateway = runner.NewLocal(&runner.Options{History: opts.History, Logger: opts.Logger})
	}
	if opts.Replica == "" {
		opts.Replica = "this process"
	}
	if opts.OpenLeaseWait == 0 {
		opts.OpenLeaseWait = defaultOpenLeaseWait
	}
	return &Core{
		opts: opts, gw: opts.Gateway, store: opts.Store, history: opts.History, log: opts.Logger,
		sessions: make(map[string]*Session), keys: make(map[string]bool), ending: make(map[string]*Session),
	}
}

// Store returns the Core's store.
func (c *Core) Store() store.Store { return c.store }

// RemoteClients reports CoreOptions.RemoteClients: the sessions' paths are
// on their clients' machines, not this one's.
func (c *Core) RemoteClients() bool { return c.opts.RemoteClients }

// Limits returns the quotas every session's servers run under
// (CoreOptions.Bridge.Limits); a front end applies the ones it checks
// itself, such as MaxMedia in a prompt.
func (c *Core) Limits() quota.Limits { return c.opts.Bridge.Limits }

// OpenRequest says which session to open and how.
type OpenRequest struct {
	// ID is the stored session to reopen (load, resume); empty creates a
	// new session with a new ID (NewID).
	ID string
	// Fork, with an empty ID, is the stored session (live or not) that the
	// new session is a fork of: it starts with a copy of Fork's committed
	// turns (the model sees them as Fork's model did; the usage totals
	// start at zero), its title and its model, and its own Cwd and Servers.
	// An unknown Fork wraps store.ErrNotFound.
	Fork string
	// Create, with ID set, creates a new session under ID instead of
	// reopening one: for a front end that names its sessions itself (the
	// MCP server's conversation keys). ID must then be 1 to 64 ASCII
	// letters, digits, '_' and '-' (else the error wraps ErrInvalid), and
	// not stored yet (else the store's error).
	Create bool
	// Key is the gateway session key of a new session; empty (or blank)
	// means "acp:<ID>". A reopened session keeps its stored key.
	Key string
	// Cwd is the session's working directory: an absolute path to an
	// existing directory (with CoreOptions.RemoteClients: an absolute
	// path, on the client's machine), else the error wraps ErrInvalid.
	Cwd string
	// AdditionalDirectories are more directories of the session (ACP
	// additionalDirectories), under the same rule as Cwd. Only in-process
	// servers see them (InProcessEnv); they are not stored, so a reopen
	// passes them again.
	AdditionalDirectories []string
	// FrontEnd is what the session's client offers: its editor,
	// permission questions, messages outside a turn, commands updates and
	// the servers it hosts. Nil offers none of them.
	FrontEnd FrontEnd
	// Servers are the session's own MCP servers, already well-formed; the
	// default servers are merged in and the per-server settings applied.
	Servers []bridge.ServerSpec
	// Replay, if set, is called with the stored turns once the history is
	// attached, before the servers are connected.
	Replay func([]store.Turn)
}

// Open opens a session: it reads the stored record (a reopen, else
// ErrNotFound) or vets the request and creates one, merges the default
// servers, ends a live instance of the same ID, attaches the history,
// connects every server in parallel (a failed server does not fail the
// open: see [bridge.Manager.Servers]), registers the tools with the gateway
// and records the servers. With CoreOptions.Leases the history is attached
// under the session's lease, waited for at most CoreOptions.OpenLeaseWait
// (see "Leases" in the package doc). It returns when every server has
// connected or failed. Errors wrap ErrNotFound, ErrInvalid (a *KeyInUseError among them), ErrClosed or
// the cause of ctx.
func (c *Core) Open(ctx context.Context, req OpenRequest) (*Session, error) {
	if req.ID != "" && req.Fork != "" {
		return nil, fmt.Errorf("session.OpenRequest: ID %q and Fork %q are both set", req.ID, req.Fork)
	}
	create := req.ID == "" || req.Create // a new session, not a reopened one
	if req.Create {
		if err := checkNewID(req.ID); err != nil {
			return nil, err
		}
	}
	var rec, src store.Record
	for _, get := range []struct {
		id  string
		rec *store.Record
	}{{req.ID, &rec}, {req.Fork, &src}} {
		if get.id == "" || get.rec == &rec && create {
			continue
		}
		var err error
		if *get.rec, err = c.store.Get(ctx, get.id); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return nil, fmt.Errorf("session %q: %w", get.id, err)
			}
			return nil, fmt.Errorf("reading the session store: %w", err)
		}
	}
	check := checkDir
	if c.opts.RemoteClients {
		check = checkAbs
	}
	if err := check("cwd", req.Cwd); err != nil {
		return nil, err
	}
	for i, d := range req.AdditionalDirectories {
		if err := check(fmt.Sprintf("additionalDirectories[%d]", i), d); err != nil {
			return nil, err
		}
	}
	id := req.ID
	if id == "" {
		id = NewID()
	}
	var stored []byte
	if !create {
		stored = rec.ServerChanges
	}
	asm, err := c.servers(req, stored, id)
	if err != nil {
		return nil, err
	}
	cell := &modeCell{}
	conf := &bridge.Confine{Mode: cell.load, Workspace: confine.Workspace{Cwd: req.Cwd, Dirs: slices.Clone(req.AdditionalDirectories)}}
	if t := c.opts.Bridge.Confine; t != nil {
		conf.Require, conf.Support = t.Require, t.Support
	}
	env := InProcessEnv{SessionID: id, Cwd: req.Cwd, AdditionalDirectories: slices.Clone(req.AdditionalDirectories), Confine: conf}
	if req.FrontEnd != nil && len(c.opts.InProcess) > 0 {
		env.Editor = req.FrontEnd.Editor(id)
	}
	specs, err := c.withInProcess(env, asm.specs)
	if err != nil {
		return nil, err
	}
	for _, p := range c.opts.InProcess {
		asm.origins[p.Name] = OriginAgent
	}
	model := ""
	if create {
		key := req.Key
		if strings.TrimSpace(key) == "" {
			key = Key(id, nil)
		}
		now := time.Now()
		rec = store.Record{ID: id, Key: key, Cwd: req.Cwd, Created: now, Updated: now, Servers: serverRefs(specs), Model: c.DefaultModel()}
		if req.Fork != "" {
			// A source stored before titles were made visible text (or
			// by another program) passes no escape sequence on.
			rec.Title, rec.Model, rec.Mode = textsafe.Line(src.Title, MaxTitle), c.restoredModel(src), src.Mode
			if err := c.fork(ctx, rec, src.ID); err != nil {
				return nil, err
			}
		} else if err := c.store.Create(ctx, rec); err != nil {
			return nil, fmt.Errorf("storing the session: %w", err)
		}
		model = rec.Model
	} else {
		model = c.restoredModel(rec)
	}
	c.log.Info("opening session", "session", rec.ID, "cwd", req.Cwd, "mcpServers", len(specs), "reopen", !create, "forkOf", req.Fork)
	cell.store(c.modeOf(rec))
	return c.open(ctx, rec, req, specs, asm, model, cell, conf)
}

func (c *Core) open(ctx context.Context, rec store.Record, req OpenRequest, specs []bridge.ServerSpec, asm *assembly, model string, mode *modeCell, conf *bridge.Confine) (*Session, error) {
	if old := c.Lookup(rec.ID); old != nil {
		c.log.Info("session reopened: ending its live instance first", "session", rec.ID)
		old.End()
	}
	s := &Session{core: c, torn: make(chan struct{}), id: rec.ID, key: rec.Key, cwd: req.Cwd, model: model, base: context.WithoutCancel(ctx),
		frontEnd: req.FrontEnd, untitled: rec.Title == "", mode: mode,
		origins: asm.origins, changes: asm.changes, pending: asm.pending, notes: asm.notes}
	// The session's private directory: its children's TMPDIR, writable in
	// workspace-write mode, and with RemoteClients (the client's cwd is on
	// its machine) where the stdio servers start.
	dir, err := os.MkdirTemp("", "acp-agent-session-")
	if err != nil {
		return nil, fmt.Errorf("making the session's private directory: %w", err)
	}
	s.dir = dir
	conf.Workspace.Temp = dir
	opts := c.bridgeOptions(s.base, rec.ID, rec.Key, req)
	opts.Confine = conf
	if c.opts.RemoteClients {
		opts.StdioDir = s.dir
	}
	if req.FrontEnd != nil {
		if ask := req.FrontEnd.Ask(rec.ID); ask != nil {
			opts.Sampler = c.sampler(s, ask)
		}
	}
	opts.OnPromptsChanged = c.commandsChanged(s, req) // prompts.go
	s.manager = bridge.NewManager(opts)
	if err := c.addWhenEnded(ctx, s); err != nil {
		s.removeDir()
		return nil, err
	}
	turns, err := c.attach(ctx, s)
	if err != nil {
		s.End()
		return nil, fmt.Errorf("loading the session's history: %w", err)
	}
	if req.Replay != nil {
		req.Replay(turns)
	}
	start := time.Now()
	_ = s.manager.Connect(ctx, specs)
	for _, name := range asm.disabled {
		_ = s.manager.SetEnabled(name, false)
	}
	if asm.dirty {
		s.saveChanges(ctx)
	}
	if err := c.gw.SetExtraTools(ctx, s.key, s.manager.Tools()); err != nil {
		s.End()
		return nil, fmt.Errorf("registering tools: %w", err)
	}
	if ctx.Err() != nil { // the caller gave up, or its connection is gone
		s.End()
		return nil, context.Cause(ctx)
	}
	if err := c.store.SetServers(ctx, rec.ID, serverRefs(specs)); err != nil {
		c.log.Warn("recording the session's servers failed", "session", rec.ID, "err", err)
	}
	c.log.Info("session ready", "session", rec.ID, "tools", len(s.manager.Tools()), "elapsed", time.Since(start))
	return s, nil
}

// assembly is what Open connects: the session's servers (not yet the
// in-process ones) with their origins, its stored changes, the project's
// servers waiting for the user's approval, the names to disable after the
// connect, and notes for the user.
type assembly struct {
	specs    []bridge.ServerSpec
	origins  map[string]Origin
	changes  serverChanges
	pending  []bridge.ServerSpec
	disabled []string
	notes    []string
	dirty    bool // changes differ from the stored ones
}

// servers merges the session's servers by origin (the config's, the
// project's approved ones, the client's own, those its user added; a later
// origin replaces an earlier one of the same name), leaves out those its
// user removed, expands the ${VAR} references of the project's and the
// added ones, applies the per-server settings and the
// servers-per-session quota.
func (c *Core) servers(req OpenRequest, stored []byte, id string) (*assembly, error) {
	a := &assembly{origins: make(map[string]Origin), changes: c.readChanges(id, stored)}
	type entry struct {
		spec   bridge.ServerSpec
		origin Origin
	}
	var all []entry
	put := func(spec bridge.ServerSpec, o Origin) {
		if i := slices.IndexFunc(all, func(e entry) bool { return e.spec.Name == spec.Name }); i >= 0 {
			all = slices.Delete(all, i, i+1)
		}
		all = append(all, entry{spec, o})
	}
	for _, d := range c.opts.DefaultServers {
		put(d, OriginConfig)
	}
	if c.opts.ProjectApprovals != nil && !c.opts.RemoteClients {
		project, err := readProject(req.Cwd)
		if err != nil {
			a.notes = append(a.notes, "The project's MCP servers cannot all be read: "+err.Error())
		}
		approved := c.opts.ProjectApprovals.Approved(req.Cwd, project)
		for _, p := range project {
			given := slices.ContainsFunc(req.Servers, func(o bridge.ServerSpec) bool { return o.Name == p.Name }) ||
				slices.ContainsFunc(a.changes.Added, func(o storedServer) bool { return o.Name == p.Name })
			switch {
			case given || slices.Contains(a.changes.Removed, p.Name):
			case approved[p.Name]:
				put(p, OriginProject)
			default:
				a.pending = append(a.pending, p)
			}
		}
		if len(a.pending) > 0 {
			a.notes = append(a.notes, PendingProjectText(req.Cwd, a.pending))
		}
	}
	for _, o := range req.Servers {
		put(o, OriginClient)
	}
	kept := a.changes.Added[:0:0]
	for _, added := range a.changes.Added {
		if len(added.Withheld) > 0 {
			a.notes = append(a.notes, fmt.Sprintf("MCP server %q, added in this session before, is not restored: the value of %s was not stored. /mcp add it again.", added.Name, strings.Join(added.Withheld, ", ")))
			a.dirty = true
			continue
		}
		kept = append(kept, added)
		put(added.spec(), OriginAdded)
	}
	a.changes.Added = kept
	for _, e := range all {
		if slices.Contains(a.changes.Removed, e.spec.Name) {
			continue
		}
		if slices.ContainsFunc(c.opts.InProcess, func(p InProcessServer) bool { return p.Name == e.spec.Name }) {
			return nil, &NameTakenError{Name: e.spec.Name}
		}
		spec := c.settle(e.spec)
		if e.origin == OriginProject || e.origin == OriginAdded {
			var err error
			if spec, err = expand(spec, c.lookupEnv); err != nil {
				a.notes = append(a.notes, fmt.Sprintf("MCP server %q is not started: %v.", e.spec.Name, err))
				continue
			}
		}
		a.specs = append(a.specs, spec)
		a.origins[spec.Name] = e.origin
	}
	for _, name := range a.changes.Disabled {
		if _, ok := a.origins[name]; ok || slices.ContainsFunc(c.opts.InProcess, func(p InProcessServer) bool { return p.Name == name }) {
			a.disabled = append(a.disabled, name)
		}
	}
	if limit := c.opts.Bridge.Limits.WithDefaults().ServersPerSession; len(a.specs) > limit {
		by := map[Origin]int{}
		for _, o := range a.origins {
			by[o]++
		}
		from := fmt.Sprintf("%d from the request, %d default servers from the config", by[OriginClient], by[OriginConfig])
		if n := by[OriginProject]; n > 0 {
			from += fmt.Sprintf(", %d from the project's %s", n, ProjectFile)
		}
		if n := by[OriginAdded]; n > 0 {
			from += fmt.Sprintf(", %d added in the session", n)
		}
		return nil, Invalidf("mcpServers: %d servers (%s) exceed the limit of %d servers per session (config limits.serversPerSession)", len(a.specs), from, limit)
	}
	return a, nil
}

// withInProcess returns specs after the session's in-process servers, built
// for env. A name used twice among them is the embedder's bug.
func (c *Core) withInProcess(env InProcessEnv, specs []bridge.ServerSpec) ([]bridge.ServerSpec, error) {
	if len(c.opts.InProcess) == 0 {
		return specs, nil
	}
	out := make([]bridge.ServerSpec, 0, len(c.opts.InProcess)+len(specs))
	for _, p := range c.opts.InProcess {
		spec := bridge.ServerSpec{Name: p.Name, Transport: bridge.TransportInProcess, Timeouts: p.Timeouts}
		if p.Lazy {
			spec.ToolsKey = p.Name // names are unique among them
			spec.NewServer = func() *mcp.Server { return p.New(env) }
		} else if spec.Server = p.New(env); spec.Server == nil {
			continue
		}
		if err := spec.Validate(); err != nil {
			return nil, fmt.Errorf("in-process server: %w", err)
		}
		if slices.ContainsFunc(out, func(o bridge.ServerSpec) bool { return o.Name == p.Name }) {
			return nil, fmt.Errorf("in-process server %q is given twice", p.Name)
		}
		out = append(out, spec)
	}
	return append(out, specs...), nil
}

// maxNewID is the longest ID OpenRequest.Create takes.
const maxNewID = 64

// checkNewID checks the ID of OpenRequest.Create: 1 to maxNewID ASCII
// letters, digits, '_' and '-', as safe in URLs, file names and logs as
// NewID's.
func checkNewID(id string) error {
	if id == "" || len(id) > maxNewID {
		return Invalidf("session ID %q: a new session's ID has 1 to %d characters", id, maxNewID)
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return Invalidf("session ID %q: a new session's ID has only ASCII letters, digits, '_' and '-'", id)
		}
	}
	return nil
}

// checkDir checks a session directory given in field (the cwd, where the
// session's stdio servers start, or an additional directory): an absolute
// path to an existing directory.
func checkDir(field, dir string) error {
	if err := checkAbs(field, dir); err != nil {
		return err
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Invalidf("%s %q does not exist", field, dir)
	case err != nil:
		return Invalidf("%s %q cannot be used: %v", field, dir, err)
	case !fi.IsDir():
		return Invalidf("%s %q is not a directory", field, dir)
	}
	return nil
}

// checkAbs checks a session directory given in field on a client's
// machine (CoreOptions.RemoteClients): an absolute path.
func checkAbs(field, dir string) error {
	if !filepath.IsAbs(dir) {
		return Invalidf("%s %q must be an absolute path", field, dir)
	}
	return nil
}

// serverRefs are the names and transports of specs: what the store keeps.
func serverRefs(specs []bridge.ServerSpec) []store.Server {
	out := make([]store.Server, len(specs))
	for i, s := range specs {
		out[i] = store.Server{Name: s.Name, Transport: string(s.Transport)}
	}
	return out
}

// bridgeOptions returns the bridge.Manager options of a session: a server's
// tools/list_changed re-registers the session's tools, seen on the next turn;
// its servers may ask the user through the session's editor (elicitor) and
// ask the user to sign in (signIn); a server the client hosts is dialed
// through the front end.
//
// The callbacks run outside any request of the session's client: their
// contexts derive from base, the session's life (Session.base).
func (c *Core) bridgeOptions(base context.Context, id, key string, req OpenRequest) *bridge.Options {
	o := c.opts.Bridge
	o.Cwd = req.Cwd
	var ed editor.Editor
	var link func(ctx context.Context, server, authURL string)
	changed := func(context.Context, ServerEvent) {}
	if fe := req.FrontEnd; fe != nil {
		if ed = fe.Editor(id); ed != nil {
			o.Elicitor = elicitor(ed)
		}
		o.Dial = dialHosted(fe, id, o.Dial)
		if ev, ok := fe.(ServerEvents); ok {
			link = func(ctx context.Context, server, authURL string) { ev.SignIn(ctx, id, server, authURL) }
			changed = func(ctx context.Context, e ServerEvent) { ev.ServerChanged(ctx, id, e) }
		} else {
			link = func(ctx context.Context, server, authURL string) { fe.Tell(ctx, id, SignInText(server, authURL)) }
			changed = func(ctx context.Context, e ServerEvent) {
				if !e.Link { // a lost or returned connection is only logged
					fe.Tell(ctx, id, ServerStateText(e.Status))
				}
			}
		}
	}
	log := c.log.With("session", id)
	si := &signIns{obs: c.opts.Observer, asked: map[string]bool{}}
	if o.OAuth != nil {
		oauth := *o.OAuth
		prompt := signInPrompt(log, ed, link)
		oauth.Prompt = func(ctx context.Context, server, authURL string) error {
			si.started(server)
			return prompt(ctx, server, authURL)
		}
		o.OAuth = &oauth
	}
	tellChange := func(e ServerEvent) {
		ctx, cancel := context.WithTimeout(base, tellTimeout)
		defer cancel()
		changed(ctx, e)
	}
	o.OnStateChanged = func(st bridge.ServerStatus) { si.changed(st); tellChange(ServerEvent{Status: st}) }
	o.OnLinkChanged = func(st bridge.ServerStatus) { tellChange(ServerEvent{Status: st, Link: true}) }
	o.ClientInfo = &mcp.Implementation{Name: c.opts.Name, Version: c.opts.Version}
	o.ToolLists = &c.toolLists
	o.Logger = log
	o.OnToolsChanged = func(tools []*gateway.Tool) {
		ctx, cancel := context.WithTimeout(base, 30*time.Second)
		defer cancel()
		if err := c.gw.SetExtraTools(ctx, key, tools); err != nil {
			c.log.Warn("registering the refreshed tools failed", "session", id, "err", err)
		}
	}
	return &o
}

// addWhenEnded adds s to the live sessions once no earlier instance of
// its key is still ending (its End's teardown clears the key's tools and
// history), or fails as add does, or with ctx's cause.
func (c *Core) addWhenEnded(ctx context.Context, s *Session) error {
	for {
		old, err := c.add(s)
		if old == nil {
			return err
		}
		c.mu.Lock()
		hook := c.waitingForEnd
		c.mu.Unlock()
		if hook != nil {
			hook()
		}
		select {
		case <-old.torn:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// add adds s to the live sessions, unless an earlier instance of its key
// is still ending (returned: wait for its torn), its key is live
// (KeyInUseError) or the Core is closing (ErrClosed).
func (c *Core) add(s *Session) (ending *Session, err error) {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	if c.keys[s.key] {
		c.mu.Unlock()
		return nil, &KeyInUseError{Key: s.key}
	}
	if old := c.ending[s.key]; old != nil {
		c.mu.Unlock()
		return old, nil
	}
	c.sessions[s.id] = s
	c.keys[s.key] = true
	c.mu.Unlock()
	if c.opts.Observer != nil {
		c.opts.Observer.SessionOpened()
	}
	return nil, nil
}

// remove drops s from the live sessions, if it is still the live instance
// of its ID, and counts it among the ending ones until ended.
func (c *Core) remove(s *Session) {
	c.mu.Lock()
	removed := c.sessions[s.id] == s
	if removed {
		delete(c.sessions, s.id)
		delete(c.keys, s.key)
		c.ending[s.key] = s
	}
	c.mu.Unlock()
	if removed && c.opts.Observer != nil {
		c.opts.Observer.SessionClosed()
	}
}

// ended notes that s's End has torn it down.
func (c *Core) ended(s *Session) {
	c.mu.Lock()
	if c.ending[s.key] == s {
		delete(c.ending, s.key)
	}
	c.mu.Unlock()
	close(s.torn)
}

// Lookup returns the live session with id, or nil.
func (c *Core) Lookup(id string) *Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessions[id]
}

// Close ends the live session with id (see [Session.End]) and reports
// whether there was one. The stored session stays.
func (c *Core) Close(id string) bool {
	s := c.Lookup(id)
	if s == nil {
		return false
	}
	s.End()
	return true
}

// Shutdown ends every live session in parallel and opens no more: running
// turns are cancelled, every MCP connection closes and every child process
// group is stopped. It is idempotent and bounded by turnWait plus the
// bridge's grace period.
func (c *Core) Shutdown() {
	c.mu.Lock()
	c.closing = true
	sessions := make([]*Session, 0, len(c.sessions))
	for _, s := range c.sessions {
		sessions = append(sessions, s)
	}
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range sessions {
		wg.Go(s.End)
	}
	wg.Wait()
	// Shutdown takes no context (acp.Agent.Shutdown and cmd's mcp-server
	// call it without one): this is the root, and each commit Flush waits
	// for is bounded by commitTimeout.
	_ = c.history.Flush(context.Background())
}

// Flush waits until every finished turn is committed to the store (see
// [History]), or ctx ends (its error): call it before reading sessions from
// the store directly, as session/list does.
func (c *Core) Flush(ctx context.Context) error { return c.history.Flush(ctx) }

// Models returns the gateway's models, the default first.
func (c *Core) Models() []gateway.ModelInfo { return c.gw.Models() }

// DefaultModel is the ID of the model new sessions start with: the
// gateway's first, or "" when it lists none.
func (c *Core) DefaultModel() string {
	if ms := c.gw.Models(); len(ms) > 0 {
		return ms[0].ID
	}
	return ""
}

// ModelIDs are the IDs of the gateway's models, the default first.
func (c *Core) ModelIDs() []string {
	var ids []string
	for _, m := range c.gw.Models() {
		ids = append(ids, m.ID)
	}
	return ids
}

// restoredModel is the model a stored session continues with: the one it
// last used, or the default when it has none or that model is no longer
// configured (which is logged).
func (c *Core) restoredModel(rec store.Record) string {
	if rec.Model == "" {
		return c.DefaultModel()
	}
	if !slices.Contains(c.ModelIDs(), rec.Model) {
		c.log.Warn("the session's model is no longer configured: it continues with the default model",
			"session", rec.ID, "storedModel", rec.Model, "model", c.DefaultModel())
		return c.DefaultModel()
	}
	return rec.Model
}

// dialHosted is the bridge.Options.Dial of a session with a front end: a
// server the client hosts (bridge.TransportACP) through the front end, any
// other through next (nil: the bridge's own).
func dialHosted(fe FrontEnd, id string, next func(context.Context, bridge.ServerSpec) (mcp.Transport, error)) func(context.Context, bridge.ServerSpec) (mcp.Transport, error) {
	return func(ctx context.Context, spec bridge.ServerSpec) (mcp.Transport, error) {
		if spec.Transport == bridge.TransportACP {
			return fe.Dial(ctx, id, spec)
		}
		if next != nil {
			return next(ctx, spec)
		}
		return nil, nil
	}
}

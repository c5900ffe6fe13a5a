package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/internal/mcpregistry"
	"github.com/seed02d3eb6b/acp-agent/internal/textsafe"
)

// mcpSection is the README section "acp-agent mcp --help" points at.
const mcpSection = "Servers from the MCP Registry"

const mcpUsage = `Usage:
  acp-agent mcp search [flags] WORDS...      find servers in the MCP Registry
  acp-agent mcp add [flags] NAME[@VERSION]   add a registry server to the config's mcpServers
  acp-agent mcp list [flags]                 the config's mcpServers
  acp-agent mcp remove [flags] NAME          remove a server from the config's mcpServers

search prints one line per server (name, version, description) whose name,
title or description holds every word. add resolves the server's server.json:
an npm package runs as "npx -y PACKAGE@VERSION", a PyPI one as
"uvx PACKAGE==VERSION", an OCI image as "docker run -i --rm IMAGE:TAG", a
remote is a Streamable HTTP or SSE entry; it then lists the environment
variables, headers and arguments the server declares, which you set, and
which are missing. The agent starts stdio servers with a sanitized
environment: a variable reaches the server only from the entry's env
(--env), never from the agent's own environment.

Flags (flags and arguments may come in any order):
`

// runMCP is "acp-agent mcp": search, add, list, remove.
func runMCP(args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs, f := mcpFlags()
	fs.Usage = func() {
		fmt.Fprint(stdout, mcpUsage)
		printFlags(stdout, fs)
		printHelpFooter(stdout, mcpSection)
	}
	pos, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return flagError(fs, err, "acp-agent mcp")
	}
	if len(pos) == 0 {
		return errors.New(`mcp: want a command: search, add, list or remove (see acp-agent mcp --help); to serve the agent to MCP clients, run "mcp-server"`)
	}
	cmd, pos := pos[0], pos[1:]
	switch cmd {
	case "search":
		return f.search(context.Background(), pos, stdout)
	case "add":
		if len(pos) != 1 {
			return fmt.Errorf("mcp add: want one server, NAME[@VERSION] (such as io.github.owner/name); got %q", pos)
		}
		return f.add(context.Background(), pos[0], args, stdout, stderr)
	case "list":
		return f.list(stdout)
	case "remove":
		if len(pos) != 1 {
			return fmt.Errorf("mcp remove: want one server name; got %q", pos)
		}
		return f.remove(pos[0], stdout)
	}
	if s, ok := suggest(cmd, []string{"search", "add", "list", "remove"}); ok {
		return fmt.Errorf("mcp: unknown command %q: did you mean %q? (see acp-agent mcp --help)", cmd, s)
	}
	return fmt.Errorf("mcp: unknown command %q: want search, add, list or remove (see acp-agent mcp --help)", cmd)
}

// mcpFlagValues are the flags of "acp-agent mcp".
type mcpFlagValues struct {
	registry, config, name, pkg *string
	remote, force               *bool
	limit                       *int
	env, headers, vars          *pairsFlag
}

func mcpFlags() (*flag.FlagSet, *mcpFlagValues) {
	fs := flag.NewFlagSet("acp-agent mcp", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := &mcpFlagValues{
		registry: fs.String("registry", mcpregistry.DefaultURL, "the registry's URL (search, add): https, or http on loopback"),
		config:   fs.String("config", "", "the config file to edit or list (default $XDG_CONFIG_HOME/acp-agent/config.json)"),
		name:     fs.String("name", "", "the server's name in the config (add; default: the last part of its registry name)"),
		pkg:      fs.String("package", "", "run the server's package of this type: npm, pypi or oci (add; default: its first of these)"),
		remote:   fs.Bool("remote", false, "connect to the server's remote instead of running a package (add; the default when it has no packages)"),
		force:    fs.Bool("force", false, "replace a server of the same name already in the config (add)"),
		limit:    fs.Int("limit", mcpregistry.DefaultSearchLimit, "how many servers search prints at most"),
		env:      &pairsFlag{},
		headers:  &pairsFlag{},
		vars:     &pairsFlag{},
	}
	fs.Var(f.env, "env", "set the stdio server's environment variable `NAME=VALUE` (add; repeatable)")
	fs.Var(f.headers, "header", "set the remote's HTTP header `NAME=VALUE` (add; repeatable)")
	fs.Var(f.vars, "var", "give `NAME=VALUE` to an argument (by its valueHint or flag name) or to a {variable} of a URL or header (add; repeatable)")
	return fs, f
}

// pairsFlag is a repeatable NAME=VALUE flag; a later NAME wins.
type pairsFlag struct{ m map[string]string }

func (p *pairsFlag) String() string { return "" }

func (p *pairsFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want NAME=VALUE, got %q", s)
	}
	if p.m == nil {
		p.m = map[string]string{}
	}
	p.m[k] = v
	return nil
}

// parseInterleaved parses args with fs, allowing flags after positional
// arguments ("add NAME --env K=V"), and returns the positional ones; after
// "--" everything is positional.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

func (f *mcpFlagValues) client() (*mcpregistry.Client, error) {
	return mcpregistry.NewClient(*f.registry, &mcpregistry.ClientOptions{UserAgent: "acp-agent/" + agentVersion()})
}

// configPath is --config, else the default path.
func (f *mcpFlagValues) configPath() (string, error) {
	if *f.config != "" {
		return *f.config, nil
	}
	if p := defaultConfigPath(); p != "" {
		return p, nil
	}
	return "", errors.New("mcp: no home directory to find the config file in: give --config FILE")
}

// search prints the servers matching words, one line each.
func (f *mcpFlagValues) search(ctx context.Context, words []string, stdout io.Writer) error {
	c, err := f.client()
	if err != nil {
		return fmt.Errorf("mcp search: %w", err)
	}
	found, err := c.Search(ctx, words, &mcpregistry.SearchOptions{Limit: *f.limit})
	if err != nil {
		return fmt.Errorf("mcp search: %w", err)
	}
	if len(found) == 0 {
		fmt.Fprintf(stdout, "No server in %s matches %q.\n", c.URL(), strings.Join(words, " "))
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	for _, s := range found {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", textsafe.Line(s.Server.Name, 200), textsafe.Line(s.Server.Version, 60), textsafe.Line(s.Server.Description, 200))
	}
	return tw.Flush()
}

// add resolves the registry server ref (NAME[@VERSION]) and writes it into
// the config; args are the command line, for the command it suggests.
func (f *mcpFlagValues) add(ctx context.Context, ref string, args []string, stdout, stderr io.Writer) error {
	name, ver, _ := strings.Cut(ref, "@")
	c, err := f.client()
	if err != nil {
		return fmt.Errorf("mcp add: %w", err)
	}
	path, err := f.configPath()
	if err != nil {
		return err
	}
	data, mode, err := readConfigText(path)
	if err != nil {
		return err
	}
	res, err := c.Get(ctx, name, ver)
	if err != nil {
		return fmt.Errorf("mcp add: %w", err)
	}
	server := res.Server
	entry, err := mcpregistry.Resolve(server, mcpregistry.Choice{Package: *f.pkg, Remote: *f.remote,
		Env: f.env.m, Headers: f.headers.m, Vars: f.vars.m})
	if err != nil {
		return fmt.Errorf("mcp add: %w", err)
	}
	local := *f.name
	if local == "" {
		local = localServerName(server.Name)
	}
	if err := bridge.ValidateServerName(local); err != nil {
		return fmt.Errorf("mcp add: --name: %w", err)
	}
	e := serverEntry{transport: entry.Transport, command: entry.Command, args: entry.Args, env: entry.Env, url: entry.URL, headers: entry.Headers}
	if len(e.env) == 0 {
		e.env = nil
	}
	if len(e.headers) == 0 {
		e.headers = nil
	}
	out, err := setServer(data, local, e, *f.force)
	if errors.Is(err, errServerExists) {
		return fmt.Errorf("mcp add: a server named %q is already in %s: add --force to replace it, or --name to add this one under another name", local, path)
	}
	if err != nil {
		return fmt.Errorf("mcp add: config %s: %w", path, err)
	}
	if err := writeConfigText(path, out, mode); err != nil {
		return fmt.Errorf("mcp add: %w", err)
	}
	printAdded(stdout, stderr, local, path, server, entry, args)
	return nil
}

// printAdded tells what add wrote: the entry, the inputs the server
// declares and their state, notes, and for each required input left
// without a value, a warning with the command that sets it.
func printAdded(stdout, stderr io.Writer, local, path string, server mcpregistry.Server, entry mcpregistry.Entry, args []string) {
	fmt.Fprintf(stdout, "Added %q to %s: %s %s, %s\n", local, path, textsafe.Line(server.Name, 200), textsafe.Line(server.Version, 60), textsafe.Line(entry.Source, 300))
	if entry.Transport == mcpregistry.EntryStdio {
		fmt.Fprintf(stdout, "  %s\n", textsafe.Line(shellJoin(append([]string{entry.Command}, entry.Args...)), 1000))
	} else {
		fmt.Fprintf(stdout, "  %s %s\n", entry.Transport, textsafe.Line(entry.URL, 500))
	}
	var missing []mcpregistry.InputState
	if len(entry.Inputs) > 0 {
		fmt.Fprintln(stdout, "It declares:")
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		for _, in := range entry.Inputs {
			var what []string
			if in.Input.IsRequired {
				what = append(what, "required")
			} else {
				what = append(what, "optional")
			}
			if in.Input.IsSecret {
				what = append(what, "secret")
			}
			state := ""
			switch in.From {
			case mcpregistry.FromGiven:
				state = "set by you"
			case mcpregistry.FromFixed:
				state = "set by the server's entry"
			case mcpregistry.FromDefault:
				state = fmt.Sprintf("default %q", in.Input.Default)
			default:
				if in.Missing() {
					state = "MISSING"
					missing = append(missing, in)
				} else {
					state = "not set"
				}
			}
			if in.Input.Value != "" && in.From == "" {
				state += fmt.Sprintf(" (value %q)", in.Input.Value)
			}
			fmt.Fprintf(tw, "  %s %s\t%s\t%s\t%s\n", in.Kind, textsafe.Line(in.Name, 100), strings.Join(what, ", "), state, textsafe.Line(in.Input.Description, 200))
		}
		_ = tw.Flush()
	}
	for _, n := range entry.Notes {
		fmt.Fprintf(stdout, "Note: %s\n", textsafe.Line(n, 500))
	}
	if entry.Transport == mcpregistry.EntryStdio {
		fmt.Fprintln(stdout, "The agent starts stdio servers with a sanitized environment (PATH, HOME, LANG, TERM and the entry's env): "+
			"a variable the server needs must be in its env (--env NAME=VALUE), not in the agent's environment.")
	}
	if len(missing) == 0 {
		return
	}
	cmd := []string{"acp-agent", "mcp"}
	cmd = append(cmd, args...)
	if !slices.Contains(args, "--force") && !slices.Contains(args, "-force") {
		cmd = append(cmd, "--force")
	}
	var names []string
	for _, in := range missing {
		names = append(names, in.Kind+" "+in.Name)
		switch in.Kind {
		case mcpregistry.KindEnv:
			cmd = append(cmd, "--env", in.Name+"=VALUE")
		case mcpregistry.KindHeader:
			cmd = append(cmd, "--header", in.Name+"=VALUE")
		default:
			cmd = append(cmd, "--var", strings.TrimLeft(in.Name, "-")+"=VALUE")
		}
	}
	fmt.Fprintf(stderr, "warning: %s required and not set; the server may fail to start until it is. Set it with:\n  %s\n",
		strings.Join(names, ", ")+map[bool]string{true: " is", false: " are"}[len(names) == 1], shellJoin(cmd))
}

// list prints the config's servers: name, transport, command or URL.
func (f *mcpFlagValues) list(stdout io.Writer) error {
	path, err := f.configPath()
	if err != nil {
		return err
	}
	cfg, err := loadConfig(path, *f.config != "")
	if err != nil {
		return err
	}
	specs, err := cfg.DefaultServers()
	if err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	if len(specs) == 0 {
		fmt.Fprintf(stdout, "No servers in %s.\n", path)
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	for _, s := range specs {
		where := s.URL
		if s.Transport == bridge.TransportStdio {
			where = shellJoin(append([]string{s.Command}, s.Args...))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", textsafe.Line(s.Name, 100), s.Transport, textsafe.Line(where, 500))
	}
	return tw.Flush()
}

// remove deletes server name from the config's mcpServers.
func (f *mcpFlagValues) remove(name string, stdout io.Writer) error {
	path, err := f.configPath()
	if err != nil {
		return err
	}
	data, mode, err := readConfigText(path)
	if err != nil {
		return err
	}
	out, found, err := deleteServer(data, name)
	if err != nil {
		return fmt.Errorf("mcp remove: config %s: %w", path, err)
	}
	if !found {
		return fmt.Errorf("mcp remove: no server named %q in %s (see acp-agent mcp list)", name, path)
	}
	if err := writeConfigText(path, out, mode); err != nil {
		return fmt.Errorf("mcp remove: %w", err)
	}
	fmt.Fprintf(stdout, "Removed %q from %s.\n", name, path)
	return nil
}

// shellJoin quotes words for a POSIX shell where they need it.
func shellJoin(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@,+%") == "" {
			out[i] = w
		} else {
			out[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
	}
	return strings.Join(out, " ")
}

package mcpregistry

import (
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Entry transports: what a config entry's "type" is.
const (
	EntryStdio = "stdio"
	EntryHTTP  = "http"
	EntrySSE   = "sse"
)

// Where an input's value came from ([InputState.From]).
const (
	// FromGiven is a value the user gave ([Choice] Env, Headers or Vars).
	FromGiven = "given"
	// FromFixed is the value server.json sets (Input.Value).
	FromFixed = "fixed"
	// FromDefault is server.json's default (Input.Default).
	FromDefault = "default"
)

// Kinds of [InputState.Kind].
const (
	KindEnv      = "env"
	KindHeader   = "header"
	KindArgument = "argument"
	KindVariable = "variable"
)

// Choice is what the user chose for [Resolve]: which package or remote,
// and the values of the server's inputs. The zero value takes the first
// package of a supported type (or the first remote when there are no
// packages) and gives no values.
type Choice struct {
	// Package picks the first package of this registryType ("npm", "pypi"
	// or "oci"); empty: the first package of a supported type.
	Package string
	// Remote picks the server's first remote instead of a package.
	Remote bool
	// Env are values of environment variables, by name. Ones the server
	// does not declare are set too (and said in Notes).
	Env map[string]string
	// Headers are values of a remote's headers, by name, as Env.
	Headers map[string]string
	// Vars are values of arguments (a positional one by its valueHint, a
	// named one by its name without leading dashes) and of {variables} in
	// a remote's URL, headers and any value.
	Vars map[string]string
}

// Entry is a server.json resolved into one config entry: either a stdio
// command (Command, Args, Env) or a remote (URL, Headers).
type Entry struct {
	// Transport is EntryStdio, EntryHTTP or EntrySSE.
	Transport string
	// Command and Args start a stdio server; Env is every variable it is
	// given (the agent starts it with a sanitized environment plus exactly
	// these). Nil for a remote.
	Command string
	Args    []string
	Env     map[string]string
	// URL and Headers reach a remote; empty for stdio.
	URL     string
	Headers map[string]string
	// Source says what was chosen: "npm package @scope/name@1.2.0",
	// "remote streamable-http https://…".
	Source string
	// Inputs are the environment variables, headers, arguments and URL
	// variables the chosen package or remote declares, in server.json's
	// order, and where each value came from.
	Inputs []InputState
	// Notes are what the user should know: arguments left out, values
	// given that the server does not declare, a runtime hint not followed.
	Notes []string
}

// InputState is one declared input and the value it got.
type InputState struct {
	// Kind is KindEnv, KindHeader, KindArgument or KindVariable.
	Kind string
	// Name is the variable's or header's name, an argument's valueHint or
	// flag name, a URL variable's name.
	Name string
	// Input is what server.json says of it.
	Input Input
	// From is FromGiven, FromFixed, FromDefault, or empty when it has no
	// value.
	From string
}

// Missing reports whether the input is required and got no value.
func (s InputState) Missing() bool { return s.From == "" && s.Input.IsRequired }

// runners are the commands that start a stdio package, by registryType.
var runners = map[string]string{RegistryNPM: "npx", RegistryPyPI: "uvx", RegistryOCI: "docker"}

// supportedTypes is how errors list the registry types Resolve accepts.
const supportedTypes = "npm, pypi or oci"

// Resolve turns server into a config entry, following choice. Packages:
// npm is "npx -y [runtime arguments] identifier@version [package
// arguments]"; pypi is "uvx [runtime arguments] identifier==version
// [package arguments]"; oci is "docker run -i --rm [runtime arguments] -e
// NAME… image[:version] [package arguments]" (docker passes each variable
// of Env through by name). Only stdio packages are accepted: the agent
// cannot start a package and then connect to it over HTTP. A remote
// (chosen by Choice.Remote, or taken when the server has no packages)
// becomes "http" (streamable-http) or "sse" with its URL's {variables}
// filled in and its headers. An argument's, variable's or header's value
// is the one given in choice, else server.json's value (with its
// {variables} filled in), else its default; an argument with none is left
// out and said in Notes; a required variable or header with none is left
// out and reported by InputState.Missing, so the user can add it later.
// Errors are *ResolveError: no packages or remotes, an unsupported
// registryType or transport, no package of the type chosen, a {variable}
// of a remote's URL with no value.
func Resolve(server Server, choice Choice) (Entry, error) {
	fail := func(field, rule string, args ...any) (Entry, error) {
		return Entry{}, &ResolveError{Server: server.Name, Field: field, Rule: fmt.Sprintf(rule, args...)}
	}
	if choice.Remote {
		if len(server.Remotes) == 0 {
			return fail("remotes", "it has no remotes; leave out --remote to run one of its packages (%s)", packageTypes(server))
		}
		return resolveRemote(server, 0, choice)
	}
	if choice.Package != "" {
		if _, ok := runners[choice.Package]; !ok {
			return fail("", "package type %q is not supported: want %s", choice.Package, supportedTypes)
		}
		for i, p := range server.Packages {
			if p.RegistryType == choice.Package {
				return resolvePackage(server, i, choice)
			}
		}
		return fail("packages", "it has no %s package (it has: %s)", choice.Package, packageTypes(server))
	}
	if len(server.Packages) == 0 {
		if len(server.Remotes) == 0 {
			return fail("", "it has neither packages nor remotes: there is nothing to run or connect to")
		}
		return resolveRemote(server, 0, choice)
	}
	for i, p := range server.Packages {
		if _, ok := runners[p.RegistryType]; ok && stdio(p) {
			return resolvePackage(server, i, choice)
		}
	}
	if len(server.Remotes) > 0 {
		return fail("packages", "none of its packages (%s) is a stdio package of a supported type (%s); use --remote to connect to its remote", packageTypes(server), supportedTypes)
	}
	return fail("packages", "none of its packages (%s) is a stdio package of a supported type (%s)", packageTypes(server), supportedTypes)
}

// stdio reports whether p is started as a stdio server (a transport type
// of "stdio", or none given).
func stdio(p Package) bool { return p.Transport.Type == "" || p.Transport.Type == TransportStdio }

// packageTypes lists the packages of s as "npm, oci (streamable-http)", or
// "none".
func packageTypes(s Server) string {
	if len(s.Packages) == 0 {
		return "none"
	}
	var out []string
	for _, p := range s.Packages {
		t := p.RegistryType
		if !stdio(p) {
			t += " (" + p.Transport.Type + ")"
		}
		out = append(out, t)
	}
	return strings.Join(out, ", ")
}

func resolvePackage(server Server, i int, choice Choice) (Entry, error) {
	p := server.Packages[i]
	field := fmt.Sprintf("packages[%d]", i)
	fail := func(f, rule string, args ...any) (Entry, error) {
		return Entry{}, &ResolveError{Server: server.Name, Field: field + f, Rule: fmt.Sprintf(rule, args...)}
	}
	if !stdio(p) {
		return fail(".transport.type", "%q: acp-agent starts stdio packages only; start it yourself and add its URL, or use --remote", p.Transport.Type)
	}
	if p.Identifier == "" {
		return fail(".identifier", "is empty")
	}
	runner := runners[p.RegistryType]
	e := Entry{Transport: EntryStdio, Command: runner, Env: map[string]string{}}
	if p.RuntimeHint != "" && p.RuntimeHint != runner {
		e.Notes = append(e.Notes, fmt.Sprintf("runtimeHint %q is not followed: %s packages run with %s", p.RuntimeHint, p.RegistryType, runner))
	}
	// Environment variables first: docker names them on its command line.
	for _, v := range p.EnvironmentVariables {
		st := InputState{Kind: KindEnv, Name: v.Name, Input: v.Input}
		if val, from, ok := value(v.Name, choice.Env, v.Input, v.Variables, choice.Vars); ok {
			e.Env[v.Name], st.From = val, from
		}
		e.Inputs = append(e.Inputs, st)
	}
	for _, k := range slices.Sorted(maps.Keys(choice.Env)) {
		if !slices.ContainsFunc(p.EnvironmentVariables, func(v KeyValueInput) bool { return v.Name == k }) {
			e.Env[k] = choice.Env[k]
			e.Notes = append(e.Notes, fmt.Sprintf("%s is set as given; the server does not declare it", k))
		}
	}
	if len(choice.Headers) > 0 {
		e.Notes = append(e.Notes, "headers are for remotes: the --header values are not used by a stdio package")
	}
	runtimeArgs := e.arguments(p.RuntimeArguments, choice)
	pkgArgs := e.arguments(p.PackageArguments, choice)
	var ref string
	switch p.RegistryType {
	case RegistryNPM:
		e.Args = append(e.Args, "-y")
		if p.RegistryBaseURL != "" && strings.TrimRight(p.RegistryBaseURL, "/") != "https://registry.npmjs.org" {
			e.Args = append(e.Args, "--registry", p.RegistryBaseURL)
		}
		e.Args = append(e.Args, runtimeArgs...)
		ref = p.Identifier
		if p.Version != "" {
			ref += "@" + p.Version
		}
	case RegistryPyPI:
		if p.RegistryBaseURL != "" && strings.TrimRight(p.RegistryBaseURL, "/") != "https://pypi.org" {
			e.Notes = append(e.Notes, fmt.Sprintf("the package is on %s, not PyPI: uvx must be told its index (UV_DEFAULT_INDEX in env)", p.RegistryBaseURL))
		}
		e.Args = append(e.Args, runtimeArgs...)
		ref = p.Identifier
		if p.Version != "" {
			ref += "==" + p.Version
		}
	case RegistryOCI:
		e.Args = append(e.Args, "run")
		if !slices.Contains(runtimeArgs, "-i") && !slices.Contains(runtimeArgs, "--interactive") {
			e.Args = append(e.Args, "-i")
		}
		if !slices.Contains(runtimeArgs, "--rm") {
			e.Args = append(e.Args, "--rm")
		}
		e.Args = append(e.Args, runtimeArgs...)
		for _, k := range slices.Sorted(maps.Keys(e.Env)) {
			e.Args = append(e.Args, "-e", k)
		}
		ref = p.Identifier
		if last := ref[strings.LastIndex(ref, "/")+1:]; !strings.ContainsAny(last, ":@") && p.Version != "" {
			ref += ":" + p.Version
		}
	}
	e.Args = append(append(e.Args, ref), pkgArgs...)
	e.Source = fmt.Sprintf("%s package %s", p.RegistryType, ref)
	return e, nil
}

// arguments turns args into command-line words, recording each in
// e.Inputs and each one left out in e.Notes.
func (e *Entry) arguments(args []Argument, choice Choice) []string {
	var out []string
	for _, a := range args {
		key, label := a.ValueHint, a.ValueHint
		if a.Type == ArgumentNamed {
			key, label = strings.TrimLeft(a.Name, "-"), a.Name
		}
		if label == "" {
			label = a.Value
		}
		st := InputState{Kind: KindArgument, Name: label, Input: a.Input}
		val, from, ok := value(key, choice.Vars, a.Input, a.Variables, choice.Vars)
		if !ok && a.Type == ArgumentNamed && a.ValueHint != "" {
			val, from, ok = value(a.ValueHint, choice.Vars, Input{}, nil, nil)
		}
		if ok {
			st.From = from
			if a.Type == ArgumentNamed {
				out = append(out, a.Name)
			}
			out = append(out, val)
		} else {
			how := "optional"
			if a.IsRequired {
				how = "required"
			}
			e.Notes = append(e.Notes, fmt.Sprintf("argument %s (%s) is left out: it has no value; give one with --var %s=VALUE", label, how, key))
		}
		e.Inputs = append(e.Inputs, st)
	}
	return out
}

func resolveRemote(server Server, i int, choice Choice) (Entry, error) {
	r := server.Remotes[i]
	field := fmt.Sprintf("remotes[%d]", i)
	fail := func(f, rule string, args ...any) (Entry, error) {
		return Entry{}, &ResolveError{Server: server.Name, Field: field + f, Rule: fmt.Sprintf(rule, args...)}
	}
	e := Entry{Headers: map[string]string{}}
	switch r.Type {
	case TransportStreamableHTTP:
		e.Transport = EntryHTTP
	case TransportSSE:
		e.Transport = EntrySSE
	default:
		return fail(".type", "%q is not a remote transport (want streamable-http or sse)", r.Type)
	}
	for _, name := range slices.Sorted(maps.Keys(r.Variables)) {
		st := InputState{Kind: KindVariable, Name: name, Input: r.Variables[name]}
		if _, from, ok := value(name, choice.Vars, r.Variables[name], nil, nil); ok {
			st.From = from
		}
		e.Inputs = append(e.Inputs, st)
	}
	u, missing := expand(r.URL, r.Variables, choice.Vars)
	if len(missing) > 0 {
		return fail(".url", "%q needs a value for {%s}: give it with --var %s=VALUE", r.URL, missing[0], missing[0])
	}
	if pu, err := url.Parse(u); err != nil || (pu.Scheme != "https" && pu.Scheme != "http") || pu.Host == "" {
		return fail(".url", "%q is not an http(s) URL", u)
	}
	e.URL = u
	for _, h := range r.Headers {
		st := InputState{Kind: KindHeader, Name: h.Name, Input: h.Input}
		if val, from, ok := value(h.Name, choice.Headers, h.Input, h.Variables, choice.Vars); ok {
			e.Headers[h.Name], st.From = val, from
		}
		e.Inputs = append(e.Inputs, st)
	}
	for _, k := range slices.Sorted(maps.Keys(choice.Headers)) {
		if !slices.ContainsFunc(r.Headers, func(h KeyValueInput) bool { return strings.EqualFold(h.Name, k) }) {
			e.Headers[k] = choice.Headers[k]
			e.Notes = append(e.Notes, fmt.Sprintf("header %s is set as given; the server does not declare it", k))
		}
	}
	if len(choice.Env) > 0 {
		e.Notes = append(e.Notes, "environment variables are for stdio packages: the --env values are not used by a remote")
	}
	e.Source = fmt.Sprintf("remote %s %s", r.Type, u)
	return e, nil
}

// value is an input's value: given[key], else in's fixed value with its
// {variables} filled in from vars (given) and their own values or
// defaults, else in's default. A fixed value with a {variable} left
// without a value counts as no value.
func value(key string, given map[string]string, in Input, variables map[string]Input, vars map[string]string) (string, string, bool) {
	if v, ok := given[key]; ok {
		return v, FromGiven, true
	}
	if in.Value != "" {
		if v, missing := expand(in.Value, variables, vars); len(missing) == 0 {
			return v, FromFixed, true
		}
		return "", "", false
	}
	if in.Default != "" {
		return in.Default, FromDefault, true
	}
	return "", "", false
}

// curly is a {variable} of a value or URL template.
var curly = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// expand fills in the {variables} of s: the value given in vars, else the
// declared variable's value, else its default. It returns the names left
// without a value, in order.
func expand(s string, variables map[string]Input, vars map[string]string) (string, []string) {
	var missing []string
	out := curly.ReplaceAllStringFunc(s, func(m string) string {
		name := m[1 : len(m)-1]
		if v, ok := vars[name]; ok {
			return v
		}
		if in, ok := variables[name]; ok {
			if in.Value != "" {
				return in.Value
			}
			if in.Default != "" {
				return in.Default
			}
		}
		missing = append(missing, name)
		return m
	})
	return out, missing
}

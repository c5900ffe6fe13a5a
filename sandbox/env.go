package sandbox

import (
	"os"
	"slices"
	"strings"
)

// BaselineEnv lists the variables a stdio MCP server inherits from the agent's
// own environment. Everything else a child sees comes from the client's
// mcpServers entry. Model API keys, the gateway token and any other variable
// of the agent never reach a child unless the client's entry sets them.
var BaselineEnv = []string{"PATH", "HOME", "LANG", "LC_ALL", "TERM", "TMPDIR", "USER"}

// injectionKeys are variables that make a program load or run code chosen by
// whoever sets them. A client's entry may not set them unless the config
// re-allows them (sandbox.allowEnv). Names ending in '*' are prefixes.
var injectionKeys = []string{
	"LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "DYLD_*",
	"NODE_OPTIONS", "PYTHONSTARTUP", "PYTHONINSPECT", "PERL5OPT", "RUBYOPT", "JAVA_TOOL_OPTIONS",
	"BASH_ENV", "ENV", "PROMPT_COMMAND",
}

// EnvVar is one environment variable of a child process.
type EnvVar struct {
	Name  string
	Value string
}

// EnvPolicy builds the environment of stdio MCP servers. The zero value is
// the default policy. It is safe for concurrent use.
type EnvPolicy struct {
	// Allow re-allows injection keys by exact name (config sandbox.allowEnv),
	// such as "NODE_OPTIONS".
	Allow []string
	// Lookup reads the agent's environment for the baseline; nil means
	// os.LookupEnv.
	Lookup func(string) (string, bool)
}

// IsInjectionKey reports whether name is a variable that can inject code into
// a child (LD_PRELOAD, NODE_OPTIONS, DYLD_*, …).
func IsInjectionKey(name string) bool {
	for _, k := range injectionKeys {
		if p, ok := strings.CutSuffix(k, "*"); ok && strings.HasPrefix(name, p) || name == k {
			return true
		}
	}
	return false
}

// ChildEnv returns the environment of a stdio MCP server as KEY=VALUE pairs:
// the BaselineEnv variables set in the agent's environment, then exactly the
// entries of env in order, less the injection keys the policy does not allow,
// whose names are returned in dropped (for a warning). An entry overrides a
// baseline variable of the same name; among duplicate entries the last wins.
func (p *EnvPolicy) ChildEnv(env []EnvVar) (out, dropped []string) {
	lookup := os.LookupEnv
	if p != nil && p.Lookup != nil {
		lookup = p.Lookup
	}
	vals := make(map[string]string, len(BaselineEnv)+len(env))
	var order []string
	set := func(k, v string) {
		if _, ok := vals[k]; !ok {
			order = append(order, k)
		}
		vals[k] = v
	}
	for _, k := range BaselineEnv {
		if v, ok := lookup(k); ok {
			set(k, v)
		}
	}
	for _, e := range env {
		if IsInjectionKey(e.Name) && (p == nil || !slices.Contains(p.Allow, e.Name)) {
			if !slices.Contains(dropped, e.Name) {
				dropped = append(dropped, e.Name)
			}
			continue
		}
		set(e.Name, e.Value)
	}
	out = make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+vals[k])
	}
	return out, dropped
}

// ValidEnvName reports whether name can be an environment variable name: not
// empty, and free of '=' and NUL.
func ValidEnvName(name string) bool {
	return name != "" && !strings.ContainsAny(name, "=\x00")
}

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

// EnvVar is one environment variable of a child process.
type EnvVar struct {
	Name  string
	Value string
}

// ChildEnv returns the environment of a stdio MCP server as KEY=VALUE pairs:
// the BaselineEnv variables that are set in the agent's environment, then
// exactly the entries of env in order. An entry overrides a baseline variable
// of the same name; among duplicate entries the last wins.
//
// lookup reads the agent's environment; nil means os.LookupEnv.
func ChildEnv(env []EnvVar, lookup func(string) (string, bool)) []string {
	if lookup == nil {
		lookup = os.LookupEnv
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
		set(e.Name, e.Value)
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+vals[k])
	}
	return out
}

// ValidEnvName reports whether name can be an environment variable name: not
// empty, and free of '=' and NUL.
func ValidEnvName(name string) bool {
	return name != "" && !strings.ContainsAny(name, "=\x00")
}

// IsBaseline reports whether name is one of BaselineEnv.
func IsBaseline(name string) bool { return slices.Contains(BaselineEnv, name) }

package environ

import (
	"os"
	"slices"
	"strings"
)

// baselineEnv lists the variables a stdio MCP server inherits from the agent's
// own environment. It is a security allowlist: unexported so that no importer
// can widen it at run time; Baseline hands out a copy.
var baselineEnv = []string{"PATH", "HOME", "LANG", "LC_ALL", "TERM", "TMPDIR", "USER"}

// Baseline returns a copy of the names of the variables a stdio MCP server
// inherits from the agent's own environment (PATH, HOME, LANG, LC_ALL, TERM,
// TMPDIR, USER). Everything else a child sees comes from the client's
// mcpServers entry. Model API keys, the gateway token and any other variable
// of the agent never reach a child unless the client's entry sets them.
// Changing the returned slice changes nothing in the policy.
func Baseline() []string { return slices.Clone(baselineEnv) }

// injectionKeys are variables that make a program load or run code chosen by
// whoever sets them. A client's entry may not set them unless the config
// re-allows them (sandbox.allowEnv). Names ending in '*' are prefixes. The
// list follows the loaders of the runtimes MCP servers are written in; each
// group says what the variables make the runtime load. Variables that only
// tune a runtime (PYTHONUNBUFFERED, NODE_ENV, GEM_HOME, …) stay allowed:
// clients set them routinely and they load nothing.
var injectionKeys = []string{
	// glibc's ld.so: preloaded and audit libraries, the library search path,
	// and every other LD_* knob of the loader (profiling output, debug
	// output files); GCONV_PATH makes iconv dlopen charset modules from a
	// chosen directory. macOS dyld: the same under DYLD_*.
	"LD_*", "GCONV_PATH", "DYLD_*",
	// Node.js: NODE_OPTIONS takes --require/--import; NODE_PATH adds module
	// directories searched by require. npm and npx (the usual launcher of
	// servers) read their whole config from npm_config_* (registry,
	// script-shell, node-options), so `npx -y pkg` would fetch or run
	// something else.
	"NODE_OPTIONS", "NODE_PATH", "npm_config_*", "NPM_CONFIG_*",
	// Python: the module search path and prefix, the user site directory
	// (its .pth files run code), a startup script, the bytecode cache
	// location, breakpoint() and warning-category hooks that import a named
	// module.
	"PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE", "PYTHONPLATLIBDIR", "PYTHONSTARTUP", "PYTHONINSPECT",
	"PYTHONPYCACHEPREFIX", "PYTHONBREAKPOINT", "PYTHONWARNINGS",
	// Ruby: interpreter options (-r), the load path, Bundler's Gemfile
	// (itself Ruby code).
	"RUBYOPT", "RUBYLIB", "BUNDLE_GEMFILE",
	// Perl: interpreter options (-M), the library path, the debugger's
	// startup code.
	"PERL5OPT", "PERL5LIB", "PERLLIB", "PERL5DB",
	// Java: options every JVM reads (-javaagent, -cp), the class path, and
	// JAVA_OPTS, which launcher scripts pass to the JVM.
	"JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH", "JAVA_OPTS",
	// .NET: startup hooks and profilers are assemblies or libraries loaded
	// into every process.
	"DOTNET_STARTUP_HOOKS", "CORECLR_PROFILER*", "CORECLR_ENABLE_PROFILING",
	// Shells: a script sourced at start (bash's BASH_ENV, sh's ENV), exported
	// functions that replace commands (BASH_FUNC_name%%), shell options
	// (SHELLOPTS=xtrace makes PS4's command substitutions run), the prompt
	// command.
	"BASH_ENV", "ENV", "BASH_FUNC_*", "SHELLOPTS", "BASHOPTS", "PS4", "PROMPT_COMMAND",
	// Git (servers that run git): configuration from the environment
	// (core.fsmonitor, core.sshCommand run programs), and the programs git
	// runs for ssh, credentials, proxies, diffs and sub-commands.
	"GIT_CONFIG_*", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_ASKPASS", "GIT_PROXY_COMMAND", "GIT_EXTERNAL_DIFF", "GIT_EXEC_PATH",
}

// Var is one environment variable of a child process.
type Var struct {
	Name  string
	Value string
}

// Policy builds the environment of stdio MCP servers. The zero value is
// the default policy. It is safe for concurrent use.
type Policy struct {
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
// the baseline variables (see Baseline) set in the agent's environment, then exactly the
// entries of env in order, less the injection keys the policy does not allow,
// whose names are returned in dropped (for a warning). An entry overrides a
// baseline variable of the same name; among duplicate entries the last wins.
func (p *Policy) ChildEnv(env []Var) (out, dropped []string) {
	lookup := os.LookupEnv
	if p != nil && p.Lookup != nil {
		lookup = p.Lookup
	}
	vals := make(map[string]string, len(baselineEnv)+len(env))
	var order []string
	set := func(k, v string) {
		if _, ok := vals[k]; !ok {
			order = append(order, k)
		}
		vals[k] = v
	}
	for _, k := range baselineEnv {
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

// ValidName reports whether name can be an environment variable name: not
// empty, and free of '=' and NUL.
func ValidName(name string) bool {
	return name != "" && !strings.ContainsAny(name, "=\x00")
}

package environ

import (
	"slices"
	"testing"
)

func TestChildEnv(t *testing.T) {
	agentEnv := map[string]string{
		"PATH": "/usr/bin", "HOME": "/home/u", "LANG": "C.UTF-8", "TERM": "xterm",
		"ANTHROPIC_API_KEY": "sk-secret", "ACP_AGENT_GATEWAY_TOKEN": "tok", "AWS_SECRET_ACCESS_KEY": "aws",
	}
	lookup := func(k string) (string, bool) { v, ok := agentEnv[k]; return v, ok }
	tests := []struct {
		name string
		env  []Var
		want []string
	}{
		{"baseline only", nil, []string{"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8", "TERM=xterm"}},
		{"entry adds", []Var{{"FOO", "bar"}}, []string{"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8", "TERM=xterm", "FOO=bar"}},
		{"entry overrides baseline", []Var{{"HOME", "/tmp/h"}}, []string{"PATH=/usr/bin", "HOME=/tmp/h", "LANG=C.UTF-8", "TERM=xterm"}},
		{"client may pass a key itself", []Var{{"ANTHROPIC_API_KEY", "client"}}, []string{"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8", "TERM=xterm", "ANTHROPIC_API_KEY=client"}},
		{"last duplicate wins", []Var{{"A", "1"}, {"A", "2"}}, []string{"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8", "TERM=xterm", "A=2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, dropped := (&Policy{Lookup: lookup}).ChildEnv(tt.env)
			if !slices.Equal(got, tt.want) || len(dropped) != 0 {
				t.Errorf("ChildEnv = %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestValidEnvName(t *testing.T) {
	for name, want := range map[string]bool{"PATH": true, "a_b": true, "": false, "A=B": false, "A\x00": false} {
		if got := ValidName(name); got != want {
			t.Errorf("ValidName(%q) = %v", name, got)
		}
	}
}

func TestChildEnv_DropsInjectionKeys(t *testing.T) {
	lookup := func(string) (string, bool) { return "", false }
	env := []Var{{"FOO", "bar"}, {"LD_PRELOAD", "/x.so"}, {"DYLD_INSERT_LIBRARIES", "y"}, {"NODE_OPTIONS", "--require=/evil.js"},
		{"ENV", "/e"}, {"BASH_ENV", "/b"}, {"PROMPT_COMMAND", "c"}, {"PYTHONSTARTUP", "p"}, {"PYTHONINSPECT", "1"},
		{"PERL5OPT", "-M"}, {"RUBYOPT", "-r"}, {"JAVA_TOOL_OPTIONS", "-j"}, {"LD_AUDIT", "a"}, {"LD_LIBRARY_PATH", "/l"}, {"LD_PRELOAD", "again"}}
	got, dropped := (&Policy{Lookup: lookup}).ChildEnv(env)
	if !slices.Equal(got, []string{"FOO=bar"}) {
		t.Errorf("env = %q", got)
	}
	if len(dropped) != 13 || dropped[0] != "LD_PRELOAD" {
		t.Errorf("dropped = %q, want every injection key once", dropped)
	}
	got, dropped = (&Policy{Lookup: lookup, Allow: []string{"NODE_OPTIONS"}}).ChildEnv([]Var{{"NODE_OPTIONS", "--max-old-space-size=512"}, {"LD_PRELOAD", "x"}})
	if !slices.Equal(got, []string{"NODE_OPTIONS=--max-old-space-size=512"}) || !slices.Equal(dropped, []string{"LD_PRELOAD"}) {
		t.Errorf("allowEnv: env %q dropped %q", got, dropped)
	}
}

func TestIsInjectionKey(t *testing.T) {
	for name, want := range map[string]bool{"LD_PRELOAD": true, "DYLD_FOO": true, "ENV": true, "ENVIRONMENT": false, "PATH": false, "ld_preload": false, "NODE_OPTIONS": true} {
		if got := IsInjectionKey(name); got != want {
			t.Errorf("IsInjectionKey(%q) = %v", name, got)
		}
	}
}

// TestIsInjectionKey_Runtimes covers the loaders of the common runtimes
// (glibc, Node.js and npm, Python, Ruby, Perl, Java, .NET, bash, git), and
// variables that only tune a runtime, which clients set routinely.
func TestIsInjectionKey_Runtimes(t *testing.T) {
	refused := []string{
		"LD_PRELOAD", "LD_PROFILE", "LD_DEBUG_OUTPUT", "GCONV_PATH", "DYLD_INSERT_LIBRARIES",
		"NODE_OPTIONS", "NODE_PATH", "npm_config_registry", "npm_config_script_shell", "NPM_CONFIG_NODE_OPTIONS",
		"PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE", "PYTHONSTARTUP", "PYTHONPYCACHEPREFIX", "PYTHONBREAKPOINT", "PYTHONWARNINGS",
		"RUBYOPT", "RUBYLIB", "BUNDLE_GEMFILE",
		"PERL5OPT", "PERL5LIB", "PERLLIB", "PERL5DB",
		"JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH", "JAVA_OPTS",
		"DOTNET_STARTUP_HOOKS", "CORECLR_PROFILER_PATH", "CORECLR_ENABLE_PROFILING",
		"BASH_ENV", "ENV", "BASH_FUNC_ls%%", "SHELLOPTS", "PS4", "PROMPT_COMMAND",
		"GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_0", "GIT_SSH_COMMAND", "GIT_EXEC_PATH", "GIT_ASKPASS",
	}
	for _, name := range refused {
		if !IsInjectionKey(name) {
			t.Errorf("IsInjectionKey(%q) = false, want true", name)
		}
	}
	allowed := []string{"PATH", "HOME", "PYTHONUNBUFFERED", "PYTHONIOENCODING", "NODE_ENV", "NODE_EXTRA_CA_CERTS", "GEM_HOME",
		"JAVA_HOME", "GIT_AUTHOR_NAME", "LANG", "LC_ALL", "GITHUB_TOKEN", "ENVIRONMENT", "BASH", "LDFLAGS"}
	for _, name := range allowed {
		if IsInjectionKey(name) {
			t.Errorf("IsInjectionKey(%q) = true, want false", name)
		}
	}
}

// The baseline is a security allowlist: what Baseline hands out is a copy,
// so an importer cannot widen what every child inherits.
func TestBaselineEnv_IsACopy(t *testing.T) {
	lookup := func(k string) (string, bool) { return "v", k == "PATH" || k == "SECRET" }
	b := Baseline()
	if !slices.Contains(b, "PATH") || slices.Contains(b, "SECRET") {
		t.Fatalf("Baseline() = %q", b)
	}
	b[0] = "SECRET"
	_ = append(b[:1], "SECRET")
	if got, _ := (&Policy{Lookup: lookup}).ChildEnv(nil); !slices.Equal(got, []string{"PATH=v"}) {
		t.Errorf("after changing Baseline's result, ChildEnv = %q, want only PATH", got)
	}
	if b2 := Baseline(); slices.Contains(b2, "SECRET") {
		t.Errorf("Baseline() = %q after a caller changed a copy", b2)
	}
}

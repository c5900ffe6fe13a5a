package doccheck

import (
	"slices"
	"strings"
	"testing"
)

// A layer rule says which imports one group of the module's packages may
// have. Packages are named by their path in the module ("session/store");
// "x/..." is x and every package under it.
type layerRule struct {
	// rule is the rule in words, as the failure message gives it.
	rule string
	// broken reports whether importer's import of imported breaks the
	// rule; both are paths in the module, or, for an import from outside
	// it, the full import path with outside set.
	broken func(importer, imported string, outside bool) bool
}

// under reports whether pkg is one of the patterns: a package ("gateway")
// or a tree ("sandbox/...").
func under(pkg string, patterns ...string) bool {
	for _, p := range patterns {
		if tree, ok := strings.CutSuffix(p, "/..."); ok {
			if pkg == tree || strings.HasPrefix(pkg, tree+"/") {
				return true
			}
		} else if pkg == p {
			return true
		}
	}
	return false
}

// only returns the rule that the packages of from import, among the
// module's packages, only those of to.
func only(from []string, to ...string) func(string, string, bool) bool {
	return func(importer, imported string, outside bool) bool {
		return !outside && under(importer, from...) && !under(imported, to...)
	}
}

// importedBy returns the rule that only the packages of by import those of
// pkgs.
func importedBy(pkgs []string, by ...string) func(string, string, bool) bool {
	return func(importer, imported string, outside bool) bool {
		return !outside && under(imported, pkgs...) && !under(importer, by...)
	}
}

// layerRules are the import rules of docs/architecture.md ("Imports point
// one way") and DESIGN.md ("Dependencies point one way"), as the module
// keeps them today. An arrow going back up breaks one.
var layerRules = []layerRule{
	{"nothing imports cmd/...", importedBy([]string{"cmd/..."})},
	{"only cmd/..., acp/... and mcpserver import acp/... or mcpserver (the front ends sit on the session core, never under it)",
		importedBy([]string{"acp/...", "mcpserver/..."}, "cmd/...", "acp/...", "mcpserver/...")},
	{"only cmd/... imports acp/remote, acp/connect, the model providers, the SQL stores, internal/metrics, internal/mcpregistry and internal/telemetry/otlp (they are chosen and wired once, in cmd)",
		importedBy([]string{"acp/remote/...", "acp/connect/...", "gateway/provider/anthropic/...", "gateway/provider/gemini/...", "gateway/provider/openai/...",
			"session/store/sqlite/...", "session/store/postgres/...", "internal/metrics/...", "internal/mcpregistry/...", "internal/telemetry/otlp/..."}, "cmd/...")},
	{"gateway imports the standard library alone", func(importer, imported string, outside bool) bool {
		return importer == "gateway" && (!outside || !standard(imported))
	}},
	{"internal/mcpregistry imports the standard library alone", func(importer, imported string, outside bool) bool {
		return importer == "internal/mcpregistry" && (!outside || !standard(imported))
	}},
	{"gateway/... imports, of the module, only gateway/... and internal/... (the runtime knows nothing of ACP, sessions or where a tool came from)",
		only([]string{"gateway/..."}, "gateway/...", "internal/...")},
	{"gateway/provider/... never imports gateway/runner (the runner uses the providers)",
		func(importer, imported string, outside bool) bool {
			return !outside && under(importer, "gateway/provider/...") && under(imported, "gateway/runner/...")
		}},
	{"bridge/... imports, of the module, only bridge/..., gateway, editor, signin, sandbox/... and internal/... (the MCP side knows no ACP session and no model)",
		only([]string{"bridge/..."}, "bridge/...", "gateway", "editor", "signin", "sandbox/...", "internal/...")},
	{"session/store/... imports, of the module, only gateway, internal/... and session/store/...",
		only([]string{"session/store/..."}, "gateway", "internal/...", "session/store/...")},
	{"sandbox/... imports, of the module, only sandbox/... and internal/... (policy, no I/O for others)",
		only([]string{"sandbox/..."}, "sandbox/...", "internal/...")},
	{"signin imports, of the module, only sandbox/...", only([]string{"signin/..."}, "sandbox/...")},
	{"editor imports no package of the module", only([]string{"editor/..."})},
	{"internal/... imports, of the module, only internal/... (internal/metrics also gateway, for its observer hooks)",
		func(importer, imported string, outside bool) bool {
			if outside || !under(importer, "internal/...") || under(imported, "internal/...") {
				return false
			}
			return !(under(importer, "internal/metrics/...") && imported == "gateway")
		}},
	{"testfixtures/... is imported by no non-test code outside testfixtures/...",
		importedBy([]string{"testfixtures/..."}, "testfixtures/...")},
}

// heavy are dependencies that only some packages may link (through any
// import): the model SDKs, SQL drivers, WebSocket libraries, Prometheus
// and the OpenTelemetry SDK stay at the edges, so that bridge, session and
// the front ends link none of them.
var heavy = []struct {
	modules []string // module paths; their packages too
	allowed []string // the packages of the module that may link them
}{
	{[]string{"github.com/anthropics/anthropic-sdk-go"}, []string{"cmd/...", "gateway/provider/anthropic/..."}},
	{[]string{"github.com/openai/openai-go"}, []string{"cmd/...", "gateway/provider/openai/..."}},
	{[]string{"google.golang.org/genai"}, []string{"cmd/...", "gateway/provider/gemini/..."}},
	{[]string{"modernc.org/sqlite"}, []string{"cmd/...", "session/store/sqlite/..."}},
	{[]string{"github.com/jackc/pgx"}, []string{"cmd/...", "session/store/postgres/...", "internal/pgtest/..."}},
	{[]string{"github.com/gorilla/websocket", "github.com/coder/websocket"}, []string{"cmd/...", "acp/remote/...", "gateway/provider/gemini/...", "gateway/provider/openai/..."}},
	{[]string{"github.com/prometheus/client_golang"}, []string{"cmd/...", "internal/metrics/..."}},
	{[]string{"go.opentelemetry.io/otel/sdk"}, []string{"cmd/...", "internal/telemetry/otlp/..."}},
}

// standard reports whether path is a standard library package: its first
// element has no dot.
func standard(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// TestImportLayers checks the non-test imports of every package of the
// module against layerRules, and what each links against heavy.
func TestImportLayers(t *testing.T) {
	mod := modulePath(t)
	rel := func(path string) (string, bool) {
		if path == mod {
			return ".", true
		}
		r, ok := strings.CutPrefix(path, mod+"/")
		return r, ok
	}
	for _, p := range modulePackages(t) {
		importer, _ := rel(p.ImportPath)
		for _, imp := range p.Imports {
			imported, inside := rel(imp)
			if !inside {
				imported = imp
			}
			for _, r := range layerRules {
				if r.broken(importer, imported, !inside) {
					t.Errorf("%s imports %s: the rule is %q", importer, imported, r.rule)
				}
			}
		}
		for _, h := range heavy {
			if under(importer, h.allowed...) {
				continue
			}
			for _, dep := range p.Deps {
				if slices.ContainsFunc(h.modules, func(m string) bool { return dep == m || strings.HasPrefix(dep, m+"/") }) {
					t.Errorf("%s links %s through its imports (go list -deps ./%s): only %s may", importer, dep, importer, strings.Join(h.allowed, ", "))
					break
				}
			}
		}
	}
}

// TestImportLayers_Rules checks that each rule catches the arrow it forbids
// and lets today's arrows pass, so that a rule cannot quietly match nothing.
func TestImportLayers_Rules(t *testing.T) {
	tests := []struct {
		importer, imported string
		outside            bool
		want               string // the start of the broken rule, "" for none
	}{
		{"acp", "cmd/acp-agent", false, "nothing imports cmd"},
		{"session", "acp", false, "only cmd/..., acp/... and mcpserver import"},
		{"acp/remote", "acp", false, ""},
		{"session", "testfixtures/mcpserver", false, "testfixtures/..."},
		{"testfixtures/mcpserver", "testfixtures/mcpserver/startclock", false, ""},
		{"acp", "acp/remote", false, "only cmd/... imports acp/remote"},
		{"session", "session/store/sqlite", false, "only cmd/... imports acp/remote"},
		{"gateway", "github.com/google/uuid", true, "gateway imports the standard library alone"},
		{"gateway", "context", true, ""},
		{"gateway", "internal/textsafe", false, "gateway imports the standard library alone"},
		{"gateway/runner", "session", false, "gateway/... imports"},
		{"gateway/runner", "internal/audit", false, ""},
		{"gateway/provider/openai", "gateway/runner", false, "gateway/provider/... never imports gateway/runner"},
		{"bridge", "session", false, "bridge/... imports"},
		{"bridge/builtin", "gateway/runner", false, "bridge/... imports"},
		{"bridge/builtin", "editor", false, ""},
		{"session/store/memory", "session", false, "session/store/... imports"},
		{"session/store", "internal/textsafe", false, ""},
		{"sandbox/process", "bridge", false, "sandbox/... imports"},
		{"signin", "bridge", false, "signin imports"},
		{"editor", "gateway", false, "editor imports no package"},
		{"internal/telemetry", "gateway", false, "internal/... imports"},
		{"internal/metrics", "gateway", false, ""},
		{"internal/metrics", "session", false, "internal/... imports"},
		{"internal/mcpregistry", "golang.org/x/oauth2", true, "internal/mcpregistry imports the standard library alone"},
	}
	for _, tt := range tests {
		var got []string
		for _, r := range layerRules {
			if r.broken(tt.importer, tt.imported, tt.outside) {
				got = append(got, r.rule)
			}
		}
		switch {
		case tt.want == "" && len(got) > 0:
			t.Errorf("%s → %s breaks %q; want no rule broken", tt.importer, tt.imported, got)
		case tt.want != "" && !slices.ContainsFunc(got, func(r string) bool { return strings.HasPrefix(r, tt.want) }):
			t.Errorf("%s → %s breaks %q; want a rule starting %q", tt.importer, tt.imported, got, tt.want)
		}
	}
}

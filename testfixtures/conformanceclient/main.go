// Command conformanceclient is the client that the official MCP conformance
// suite (@modelcontextprotocol/conformance) tests in e2e's
// TestConformance_MCPClient: it reaches the scenario's server through
// package bridge exactly as an acp-agent session does (bridge.NewManager,
// one Streamable HTTP bridge.ServerSpec, Manager.Connect, Manager.Tools,
// gateway.Tool.Execute) and then does what the scenario asks of a client,
// like the go-sdk's conformance/everything-client does with its own client.
//
// Usage, as the suite runs it: conformanceclient SERVER_URL, with the
// scenario's name in MCP_CONFORMANCE_SCENARIO and its JSON context (if any)
// in MCP_CONFORMANCE_CONTEXT. It exits 0 when the scenario's steps ran and 1
// with the reason on stderr when one failed; the suite's checks, not the exit
// status alone, decide whether the scenario passes.
//
// The client implements no MCP feature of its own: it negotiates what the
// bridge negotiates (bridge.ProtocolVersion, 2026-07-28), answers
// elicitations through a bridge.Elicitor and signs in through bridge.OAuth
// (an in-memory token store; the user follows every sign-in link, as
// acpclient.FollowSignIn does) as an editor's user would; what the bridge
// does not do fails, and the scenario is in
// e2e/testdata/conformance-client-baseline.yml with its reason.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/internal/acpclient"
	"github.com/seed02d3eb6b/acp-agent/signin"
)

// serverName is the name of the one server of the client's session; tools
// are found by their label, serverName + "/" + the server's tool name.
const serverName = "conformance"

// scenarios maps each client scenario of the suite to what the client does
// once connected. A scenario not listed only connects (initialize and
// tools/list); an OAuth one (auth/...) then calls test-tool.
var scenarios = map[string]func(ctx context.Context, c *client, conf map[string]any) error{
	"tools_call": func(ctx context.Context, c *client, _ map[string]any) error {
		return c.call(ctx, "add_numbers", map[string]any{"a": 5, "b": 3})
	},
	"elicitation-sep1034-client-defaults": func(ctx context.Context, c *client, _ map[string]any) error {
		return c.call(ctx, "test_client_elicitation_defaults", map[string]any{})
	},
	"sse-retry": func(ctx context.Context, c *client, _ map[string]any) error {
		return c.call(ctx, "test_reconnection", map[string]any{})
	},
	"json-schema-2020-12-preservation": func(ctx context.Context, c *client, _ map[string]any) error {
		focal, err := c.tool("json_schema_2020_12_tool")
		if err != nil {
			return err
		}
		// The schema as the bridge hands it to a model: it must keep every
		// 2020-12 keyword the server sent.
		var schema any
		if err := json.Unmarshal(focal.InputSchema, &schema); err != nil {
			return fmt.Errorf("tool %q: input schema: %w", focal.Label, err)
		}
		return c.call(ctx, "json_schema_echo", map[string]any{"schema": schema})
	},
	"sep-2322-client-request-state": func(ctx context.Context, c *client, _ map[string]any) error {
		var errs []error
		for _, name := range []string{"test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_unrelated", "test_mrtr_no_result_type"} {
			errs = append(errs, c.call(ctx, name, map[string]any{}))
		}
		return errors.Join(errs...)
	},
	"http-standard-headers": func(ctx context.Context, c *client, _ map[string]any) error {
		// One request of each verb the bridge sends as a session would:
		// a tool call, a resource read (/read), a prompt (/server:prompt).
		tools := c.m.Tools()
		if len(tools) == 0 {
			return fmt.Errorf("server %q offered no tool", serverName)
		}
		var errs []error
		if _, err := tools[0].Execute(ctx, "call-1", map[string]any{}, nil); err != nil {
			errs = append(errs, err)
		}
		for _, sr := range c.m.Resources() {
			if len(sr.Resources) > 0 {
				if _, err := c.m.ReadResource(ctx, sr.Resources[0].URI); err != nil {
					errs = append(errs, err)
				}
				break
			}
		}
		if ps := c.m.Prompts(); len(ps) > 0 {
			if _, err := c.m.GetPrompt(ctx, ps[0].Name, map[string]string{}); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	},
	"http-custom-headers": func(ctx context.Context, c *client, conf map[string]any) error {
		calls, _ := conf["toolCalls"].([]any)
		var errs []error
		for _, raw := range calls {
			call, _ := raw.(map[string]any)
			name, _ := call["name"].(string)
			args, _ := call["arguments"].(map[string]any)
			if args == nil {
				args = map[string]any{}
			}
			errs = append(errs, c.call(ctx, name, args))
		}
		return errors.Join(errs...)
	},
	"http-invalid-tool-headers": func(ctx context.Context, c *client, _ map[string]any) error {
		// Calls every tool the bridge kept: a tool whose header annotations
		// are invalid must not be among them.
		var errs []error
		for _, t := range c.m.Tools() {
			if _, err := t.Execute(ctx, "call-1", map[string]any{"region": "us-west1"}, nil); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	},
}

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if err := run(log); err != nil {
		log.Error("conformance scenario failed", "scenario", os.Getenv("MCP_CONFORMANCE_SCENARIO"), "err", err)
		os.Exit(1)
	}
}

func run(log *slog.Logger) error {
	if len(os.Args) != 2 {
		return fmt.Errorf("usage: %s SERVER_URL (with MCP_CONFORMANCE_SCENARIO set)", os.Args[0])
	}
	name := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	if name == "" {
		return fmt.Errorf("MCP_CONFORMANCE_SCENARIO is not set")
	}
	var conf map[string]any
	if raw := os.Getenv("MCP_CONFORMANCE_CONTEXT"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &conf); err != nil {
			return fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	// The suite gives a scenario 30 s by default.
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()

	// The servers' states after Connect: a sign-in ends in the background.
	states := make(chan bridge.ServerStatus, 4)
	m := bridge.NewManager(&bridge.Options{
		// The user follows every sign-in link in a browser on this machine.
		OAuth: &bridge.OAuth{
			Store:               signin.NewMemory(),
			ClientIDMetadataURL: clientMetadataURL,
			Prompt: func(ctx context.Context, _, authURL string) error {
				if err := acpclient.FollowSignIn(ctx, authURL); err != nil {
					log.Warn("following the sign-in link", "err", err)
				}
				return nil
			},
		},
		OnStateChanged: func(st bridge.ServerStatus) { states <- st },
		ClientInfo:     &mcp.Implementation{Name: "acp-agent-conformance", Version: "dev"},
		Logger:         log,
		// The user, as an editor would ask them: accept every form
		// unchanged. The bridge does the MCP side (capability, defaults,
		// the answer).
		Elicitor: &bridge.Elicitor{Form: true, Elicit: func(context.Context, bridge.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		}},
	})
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := m.Close(closeCtx); err != nil {
			log.Warn("closing the bridge", "err", err)
		}
	}()
	spec := bridge.ServerSpec{Name: serverName, Transport: bridge.TransportHTTP, URL: os.Args[1]}
	// A client registered beforehand (config servers.<name>.oauth).
	if id, ok := conf["client_id"].(string); ok {
		secret, _ := conf["client_secret"].(string)
		spec.OAuth = signin.Client{ID: id, Secret: secret}
	}
	if err := m.Connect(ctx, []bridge.ServerSpec{spec}); err != nil {
		return err
	}
	st := m.Servers()[0]
	if st.State == bridge.StateSignIn {
		select {
		case st = <-states:
		case <-ctx.Done():
			return fmt.Errorf("server %q: no sign-in: %w", serverName, ctx.Err())
		}
	}
	if st.State != bridge.StateConnected {
		return fmt.Errorf("server %q is %s: %v", serverName, st.State, st.Err)
	}
	if do := scenarios[name]; do != nil {
		return do(ctx, &client{m: m}, conf)
	}
	if strings.HasPrefix(name, "auth/") {
		// What the reference client does once signed in: a tool call
		// (which may need a step-up of scopes).
		return (&client{m: m}).call(ctx, "test-tool", map[string]any{})
	}
	return nil
}

// clientMetadataURL is the Client ID Metadata Document URL the suite's
// authorization servers expect (config oauth.clientIdMetadataDocument).
const clientMetadataURL = "https://conformance-test.local/client-metadata.json"

// client finds the tools of the session's one server.
type client struct {
	m *bridge.Manager
}

// tool returns the bridged tool that is the server's tool name.
func (c *client) tool(name string) (*gateway.Tool, error) {
	want := bridge.BridgedNames([]bridge.ToolRef{{Server: serverName, Tool: name}})[0]
	for _, t := range c.m.Tools() {
		if t.Name == want {
			return t, nil
		}
	}
	return nil, fmt.Errorf("server %q has no tool %q", serverName, name)
}

// call calls the server's tool name with args. A result with isError is a
// failure too.
func (c *client) call(ctx context.Context, name string, args map[string]any) error {
	t, err := c.tool(name)
	if err != nil {
		return err
	}
	res, err := t.Execute(ctx, "call-1", args, nil)
	if err != nil {
		return err
	}
	if res.IsError {
		return fmt.Errorf("tool %q returned an error result: %+v", t.Label, res.Content)
	}
	return nil
}

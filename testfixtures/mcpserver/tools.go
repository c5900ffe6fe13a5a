package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"

	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
)

// longToolName needs truncation once bridged as mcp__<server>__<tool>.
const longToolName = "a_tool_with_a_deliberately_very_long_name_that_needs_truncation_when_bridged"

type (
	none   struct{}
	echoIn struct {
		Message string `json:"message" jsonschema:"the text to echo back"`
	}
	addIn struct {
		A float64 `json:"a" jsonschema:"first addend"`
		B float64 `json:"b" jsonschema:"second addend"`
	}
	addOut struct {
		Sum float64 `json:"sum" jsonschema:"a + b"`
	}
	// slowIn is filled in from slowSchema, whose defaults the SDK applies.
	slowIn struct {
		Seconds float64 `json:"seconds"`
		Steps   int     `json:"steps"`
	}
	escapeeIn struct {
		Daemon bool `json:"daemon,omitempty" jsonschema:"orphan it at once, as a daemon does"`
	}
	sampleIn struct {
		Topic string `json:"topic,omitempty" jsonschema:"what the haiku is about (default: the sea)"`
		Times int    `json:"times,omitempty" jsonschema:"how many requests to send (default 1)"`
	}
	failIn struct {
		Message string `json:"message,omitempty" jsonschema:"the failure text (default: requested)"`
	}
)

// slowSchema is written by hand because struct tags cannot carry defaults.
var slowSchema = json.RawMessage(`{
	"type": "object",
	"properties": {
		"seconds": {"type": "number", "minimum": 0, "default": 30, "description": "total time to sleep"},
		"steps": {"type": "integer", "minimum": 1, "default": 10, "description": "number of progress notifications"}
	},
	"additionalProperties": false
}`)

// rootsInput is the key of the roots/list input request the roots tool makes.
const rootsInput = "roots"

func addTools(srv *mcp.Server) {
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true}

	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Annotations: readOnly,
		Description: "Echo a message back.\nReturns \"Echo: <message>\"."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return text("Echo: " + in.Message), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "add", Annotations: readOnly,
		Description: "Add two numbers.\nReturns the sum as text and as structured content {\"sum\": n}."},
		func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
			sum := in.A + in.B
			return text(strconv.FormatFloat(sum, 'f', -1, 64)), addOut{Sum: sum}, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "image",
		Description: "Return a tiny PNG image.\nA text block, then a 1x1 image/png block."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "tiny image"},
				&mcp.ImageContent{Data: tinyPNG(), MIMEType: "image/png"},
			}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "audio",
		Description: "Return a tiny WAV clip.\nOne audio/wav block of a few 16-bit mono samples."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.AudioContent{Data: tinyWAV(), MIMEType: "audio/wav"},
			}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "resource",
		Description: "Return an embedded text resource.\nfixture://notes/hello.txt, text/plain."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
				URI: "fixture://notes/hello.txt", MIMEType: "text/plain", Text: "hello from an embedded resource",
			}}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "resource_link",
		Description: "Return a link to a resource.\nfixture://files/report.pdf, application/pdf, 1234 bytes."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			size := int64(1234)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ResourceLink{
				URI: "fixture://files/report.pdf", Name: "report.pdf", Title: "Report",
				Description: "a linked file", MIMEType: "application/pdf", Size: &size,
			}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "slow", InputSchema: slowSchema,
		Description: "Sleep, reporting progress, until done or cancelled.\n" +
			"Sends a progress notification after each of steps equal slices of seconds, " +
			"if the request carries a progress token."},
		slow)
	mcp.AddTool(srv, &mcp.Tool{Name: "fail",
		Description: "Fail with isError.\nReturns \"fixture failure: <message>\"."},
		func(_ context.Context, _ *mcp.CallToolRequest, in failIn) (*mcp.CallToolResult, any, error) {
			msg := in.Message
			if msg == "" {
				msg = "requested"
			}
			res := text("fixture failure: " + msg)
			res.IsError = true
			return res, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "crash",
		Description: "Exit the server in the middle of the call.\nThe process exits with status 3 and never answers."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			log.Print("crash requested: exiting with status 3")
			os.Exit(3)
			return nil, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "spawn_grandchild",
		Description: "Start `sleep 600` in the server's process group.\nReturns its pid; the server does not wait for it."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			// No SysProcAttr: the child stays in the server's process group.
			// Its stdio is /dev/null, so it holds none of the server's pipes.
			cmd := exec.Command("sleep", "600")
			if err := cmd.Start(); err != nil {
				return nil, nil, err
			}
			go func() { _ = cmd.Wait() }() // reap it if it is killed before the server
			return text(strconv.Itoa(cmd.Process.Pid)), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "spawn_escapee",
		Description: "Start `sleep 600` out of the server's process group and session (setsid).\n" +
			"With daemon, it is double-forked: its parent exits at once, orphaning it while the server runs. " +
			"Returns its pid."},
		spawnEscapee)
	mcp.AddTool(srv, &mcp.Tool{Name: "env",
		Description: "Return the server's environment.\nSorted, one KEY=VALUE a line."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			env := os.Environ()
			slices.Sort(env)
			return text(strings.Join(env, "\n")), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "headers",
		Description: "Return the HTTP headers of the request that carried the call.\nSorted, one \"Name: value\" a line; empty over stdio."},
		func(_ context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			var h http.Header
			if req.Extra != nil {
				h = req.Extra.Header
			}
			if len(h) == 0 && lastPostHeader.Load() != nil {
				h = *lastPostHeader.Load()
			}
			var lines []string
			for k, vs := range h {
				lines = append(lines, k+": "+strings.Join(vs, ", "))
			}
			slices.Sort(lines)
			return text(strings.Join(lines, "\n")), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "meta", Annotations: readOnly,
		Description: "Return the string members of the request's _meta (such as traceparent).\nSorted, one \"key: value\" a line."},
		func(_ context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			var lines []string
			for k, v := range req.Params.GetMeta() {
				if s, ok := v.(string); ok {
					lines = append(lines, k+": "+s)
				}
			}
			slices.Sort(lines)
			return text(strings.Join(lines, "\n")), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "roots",
		Description: "Return the client's roots.\nOne URI a line."},
		roots)
	mcp.AddTool(srv, &mcp.Tool{Name: "ask_name",
		Description: "Ask the user their name and favourite color (form elicitation).\n" +
			"Returns \"accept name=<name> color=<color>\", \"decline\", \"cancel\", or \"no elicitation\" when the client cannot be asked."},
		askName)
	mcp.AddTool(srv, &mcp.Tool{Name: "sign_in",
		Description: "Send the user to a sign-in page (URL elicitation), then report it complete.\n" +
			"Returns the user's action, or \"no elicitation\" when the client cannot be asked in URL mode."},
		signIn)
	mcp.AddTool(srv, &mcp.Tool{Name: "sample",
		Description: "Ask the client's model to write a haiku about topic, times times (MCP sampling; sent even when the client does not offer sampling).\n" +
			"Returns each answer as \"<text> [model <model>, <stopReason>]\", one a line, or \"sampling failed: <error>\" (isError); " +
			"prefixed with \"no sampling capability; \" when the client did not offer sampling."},
		sample)
	mcp.AddTool(srv, &mcp.Tool{Name: longToolName,
		Description: "A tool whose bridged name must be truncated.\nReturns \"long name ok\"."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return text("long name ok"), nil, nil
		})
	yes := true
	mcp.AddTool(srv, &mcp.Tool{Name: "weather", Title: "Weather Report", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &yes},
		Description: "Report the weather.\nReturns structured content {\"celsius\": 21, \"sky\": \"clear\"} and no content blocks, " +
			"or with summary true a text block \"21 °C, clear\" as well."},
		func(_ context.Context, _ *mcp.CallToolRequest, in weatherIn) (*mcp.CallToolResult, weatherOut, error) {
			res := &mcp.CallToolResult{Content: []mcp.Content{}}
			if in.Summary {
				res = text("21 °C, clear")
			}
			return res, weatherOut{Celsius: 21, Sky: "clear"}, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "add_prompt",
		Description: "Add the prompt name to this server (it sends notifications/prompts/list_changed).\nIts messages: one user text \"<name> says <arg>\" (argument arg, required)."},
		func(_ context.Context, _ *mcp.CallToolRequest, in addPromptIn) (*mcp.CallToolResult, any, error) {
			srv.AddPrompt(&mcp.Prompt{Name: in.Name, Arguments: []*mcp.PromptArgument{{Name: "arg", Required: true}}},
				func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
					return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: in.Name + " says " + req.Params.Arguments["arg"]}}}}, nil
				})
			return text("added prompt " + in.Name), nil, nil
		})
	// One prompt from the start, so the server advertises prompts (with
	// listChanged) and add_prompt's notifications reach the client.
	srv.AddPrompt(&mcp.Prompt{Name: "greeting", Description: "Greet someone", Arguments: []*mcp.PromptArgument{{Name: "name", Required: true}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Say hello to " + req.Params.Arguments["name"]}}}}, nil
		})
}

type weatherIn struct {
	Summary bool `json:"summary,omitempty" jsonschema:"also return a text summary"`
}

type weatherOut struct {
	Celsius int    `json:"celsius"`
	Sky     string `json:"sky"`
}

type addPromptIn struct {
	Name string `json:"name"`
}

// askNameSchema uses the 2025-11-25 additions: a default and a titled enum.
var askNameSchema = json.RawMessage(`{
	"type": "object",
	"properties": {
		"name": {"type": "string", "title": "Name", "default": "Ada"},
		"color": {"type": "string", "title": "Favourite color", "default": "green",
			"oneOf": [{"const": "red", "title": "Red"}, {"const": "green", "title": "Green"}, {"const": "blue", "title": "Blue"}]}
	},
	"required": ["name"]
}`)

// SignInURL and SignInID are the page and elicitation ID of sign_in.
const (
	signInURL = "https://example.test/sign-in"
	signInID  = "fixture-sign-in"
)

// elicitation returns the client's elicitation capability, or nil.
func elicitation(req *mcp.CallToolRequest) *mcp.ElicitationCapabilities {
	if p := req.Session.InitializeParams(); p != nil && p.Capabilities != nil {
		return p.Capabilities.Elicitation
	}
	return nil
}

// askName asks for a name and a color in a form, when the client can be
// asked.
func askName(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
	if c := elicitation(req); c == nil || c.Form == nil && c.URL != nil {
		return text("no elicitation"), nil, nil
	}
	res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Mode: "form", Message: "What is your name?", RequestedSchema: askNameSchema})
	if err != nil {
		r := text("elicitation failed: " + err.Error())
		r.IsError = true
		return r, nil, nil
	}
	if res.Action != "accept" {
		return text(res.Action), nil, nil
	}
	return text(fmt.Sprintf("accept name=%v color=%v", res.Content["name"], res.Content["color"])), nil, nil
}

// signIn sends the user to signInURL and, once they accept, tells the
// client the sign-in is complete.
func signIn(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
	if c := elicitation(req); c == nil || c.URL == nil {
		return text("no elicitation"), nil, nil
	}
	res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Mode: "url", Message: "Sign in to the fixture", URL: signInURL, ElicitationID: signInID})
	if err != nil {
		r := text("elicitation failed: " + err.Error())
		r.IsError = true
		return r, nil, nil
	}
	if res.Action == "accept" {
		if err := req.Session.NotifyElicitationComplete(ctx, &mcp.ElicitationCompleteParams{ElicitationID: signInID}); err != nil {
			log.Printf("sign_in: elicitation/complete: %v", err)
		}
	}
	return text(res.Action), nil, nil
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// slow sleeps in.Seconds in in.Steps slices, sending a progress notification
// after each when the client sent a progress token, and stops as soon as the
// call is cancelled.
func slow(ctx context.Context, req *mcp.CallToolRequest, in slowIn) (*mcp.CallToolResult, any, error) {
	steps := max(in.Steps, 1)
	slice := time.Duration(in.Seconds * float64(time.Second) / float64(steps))
	token := req.Params.GetProgressToken()
	timer := time.NewTimer(slice)
	defer timer.Stop()
	for i := 1; i <= steps; i++ {
		select {
		case <-ctx.Done():
			record("cancelled slow")
			return nil, nil, ctx.Err()
		case <-timer.C:
		}
		if token != nil {
			err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: token,
				Progress:      float64(i),
				Total:         float64(steps),
				Message:       fmt.Sprintf("step %d of %d", i, steps),
			})
			if err != nil {
				log.Printf("slow: progress: %v", err)
			}
		}
		timer.Reset(slice)
	}
	return text("slept " + strconv.FormatFloat(in.Seconds, 'f', -1, 64) + "s"), nil, nil
}

// roots returns the client's root URIs. It asks for them with a multi
// round-trip input request rather than ServerSession.ListRoots, which go-sdk
// refuses on protocol 2026-07-28: there the client answers the input request
// and calls again with inputResponses, while on 2025-11-25 the SDK's server
// middleware sends roots/list itself and calls this handler again.
func roots(_ context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
	//lint:ignore SA1019 the fixture checks that the bridge still offers roots.
	res, ok := req.Params.InputResponses[rootsInput].(*mcp.ListRootsResult)
	if !ok {
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
			//lint:ignore SA1019 the fixture checks that the bridge still offers roots.
			rootsInput: &mcp.ListRootsParams{},
		}}, nil, nil
	}
	var uris []string
	for _, r := range res.Roots {
		uris = append(uris, r.URI)
	}
	return text(strings.Join(uris, "\n")), nil, nil
}

// spawnEscapee starts `sleep 600` in a session of its own, with /dev/null
// for stdio: a child of the server, or with in.Daemon an orphan (a shell
// starts it in the background and exits).
func spawnEscapee(_ context.Context, _ *mcp.CallToolRequest, in escapeeIn) (*mcp.CallToolResult, any, error) {
	if in.Daemon {
		out, err := exec.Command("sh", "-c", "setsid sleep 600 </dev/null >/dev/null 2>&1 & echo $!").Output()
		if err != nil {
			return nil, nil, err
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
		if err != nil {
			return nil, nil, fmt.Errorf("spawn_escapee: pid %q: %v", out, err)
		}
		// Answer once setsid has run, so the caller sees it out of the group.
		if !testutil.Eventually(10*time.Second, func() bool {
			sid, err := unix.Getsid(pid)
			return err != nil || sid == pid
		}) {
			return nil, nil, fmt.Errorf("spawn_escapee: %d never left the session", pid)
		}
		return text(strconv.Itoa(pid)), nil, nil
	}
	cmd := exec.Command("sleep", "600")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	go func() { _ = cmd.Wait() }() // reap it if it is killed before the server
	return text(strconv.Itoa(cmd.Process.Pid)), nil, nil
}

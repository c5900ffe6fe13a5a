// Command mcpserver is the Go MCP server acp-agent's tests and demo run over
// stdio (server name "fixture"). It has one tool per thing the bridge must
// carry:
//
//	echo, add                  text (add also returns structured content)
//	image, audio               a tiny PNG, a tiny WAV
//	resource, resource_link    an embedded text resource, a resource link
//	slow                       sleeps, reports progress, honours cancellation
//	fail                       a result with isError
//	crash                      exits in the middle of the call
//	spawn_grandchild           starts `sleep 600` in its process group
//	env, roots                 the environment it got, the client's roots
//	a_tool_with_a_deliberately_very_long_name_that_needs_truncation_when_bridged
//
// If FIXTURE_LOG names a file, each call appends "called <tool>" to it, and a
// cancelled slow call appends "cancelled slow". stdout carries MCP only.
package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// longToolName needs truncation once bridged as mcp__<server>__<tool>.
const longToolName = "a_tool_with_a_deliberately_very_long_name_that_needs_truncation_when_bridged"

func main() {
	log.SetOutput(os.Stderr)
	srv := newServer()
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Printf("fixture: %v", err)
	}
}

var logMu sync.Mutex

// record appends a line to $FIXTURE_LOG, if set.
func record(line string) {
	path := os.Getenv("FIXTURE_LOG")
	if path == "" {
		return
	}
	logMu.Lock()
	defer logMu.Unlock()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		log.Printf("fixture: %v", err)
		return
	}
	defer f.Close()
	fmt.Fprintln(f, line)
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

type (
	echoIn struct {
		Message string `json:"message" jsonschema:"the text to echo back"`
	}
	addIn struct {
		A float64 `json:"a" jsonschema:"first addend"`
		B float64 `json:"b" jsonschema:"second addend"`
	}
	addOut struct {
		Sum float64 `json:"sum"`
	}
	slowIn struct {
		Seconds float64 `json:"seconds,omitempty" jsonschema:"how long to run, default 30"`
		Steps   int     `json:"steps,omitempty" jsonschema:"progress notifications to send, default 10"`
	}
	failIn struct {
		Message string `json:"message,omitempty" jsonschema:"the failure text"`
	}
	none struct{}
)

func newServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "fixture", Version: "1.0.0"}, nil)
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && method == "tools/call" {
				record("called " + p.Name)
			}
			return next(ctx, method, req)
		}
	})
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true}

	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Echo a message back.\nReturns \"Echo: <message>\".", Annotations: readOnly},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return text("Echo: " + in.Message), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "add", Description: "Add two numbers.", Annotations: readOnly},
		func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
			sum := in.A + in.B
			return text(strconv.FormatFloat(sum, 'f', -1, 64)), addOut{Sum: sum}, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "image", Description: "Return a tiny PNG image.", Annotations: readOnly},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "tiny image"},
				&mcp.ImageContent{Data: tinyPNG, MIMEType: "image/png"},
			}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "audio", Description: "Return a tiny WAV clip.", Annotations: readOnly},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.AudioContent{Data: tinyWAV(), MIMEType: "audio/wav"}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "resource", Description: "Return an embedded text resource.", Annotations: readOnly},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
				URI: "fixture://notes/hello.txt", MIMEType: "text/plain", Text: "hello from an embedded resource",
			}}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "resource_link", Description: "Return a link to a resource.", Annotations: readOnly},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			size := int64(1234)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ResourceLink{
				URI: "fixture://files/report.pdf", Name: "report.pdf", Title: "Report",
				Description: "a linked file", MIMEType: "application/pdf", Size: &size,
			}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "slow", Description: "Sleep, reporting progress; honours cancellation."},
		func(ctx context.Context, req *mcp.CallToolRequest, in slowIn) (*mcp.CallToolResult, any, error) {
			return slow(ctx, req, in)
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "fail", Description: "Fail with isError."},
		func(_ context.Context, _ *mcp.CallToolRequest, in failIn) (*mcp.CallToolResult, any, error) {
			msg := in.Message
			if msg == "" {
				msg = "requested"
			}
			res := text("fixture failure: " + msg)
			res.IsError = true
			return res, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "crash", Description: "Exit the server in the middle of the call."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			log.Printf("fixture: crashing on request")
			os.Exit(3)
			return nil, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "spawn_grandchild", Description: "Start `sleep 600` in the server's process group; returns its pid."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			cmd := exec.Command("sleep", "600")
			if err := cmd.Start(); err != nil {
				return nil, nil, err
			}
			go func() { _ = cmd.Wait() }()
			return text(strconv.Itoa(cmd.Process.Pid)), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "env", Description: "Return the server's environment, sorted, one KEY=VALUE a line.", Annotations: readOnly},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			env := os.Environ()
			slices.Sort(env)
			return text(strings.Join(env, "\n")), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "roots", Description: "Return the client's roots, one URI a line.", Annotations: readOnly},
		func(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			//lint:ignore SA1019 the fixture checks that the agent still offers roots (protocol 2025-11-25).
			res, err := req.Session.ListRoots(ctx, nil)
			if err != nil {
				return nil, nil, err
			}
			var uris []string
			for _, r := range res.Roots {
				uris = append(uris, r.URI)
			}
			return text(strings.Join(uris, "\n")), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: longToolName, Description: "A tool whose bridged name must be truncated."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return text("long name ok"), nil, nil
		})
	return srv
}

// slow sleeps in.Seconds, sending in.Steps progress notifications when the
// client sent a progress token, and stops at once when cancelled.
func slow(ctx context.Context, req *mcp.CallToolRequest, in slowIn) (*mcp.CallToolResult, any, error) {
	if in.Seconds <= 0 {
		in.Seconds = 30
	}
	if in.Steps <= 0 {
		in.Steps = 10
	}
	token := req.Params.GetProgressToken()
	step := time.Duration(in.Seconds * float64(time.Second) / float64(in.Steps))
	timer := time.NewTimer(step)
	defer timer.Stop()
	for i := 1; i <= in.Steps; i++ {
		select {
		case <-ctx.Done():
			record("cancelled slow")
			return nil, nil, ctx.Err()
		case <-timer.C:
		}
		if token != nil {
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: token, Progress: float64(i), Total: float64(in.Steps), Message: fmt.Sprintf("step %d of %d", i, in.Steps),
			})
		}
		timer.Reset(step)
	}
	return text(fmt.Sprintf("slept %gs", in.Seconds)), nil, nil
}

// tinyPNG is a valid 1x1 PNG.
var tinyPNG = []byte{
	0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
	0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
	0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0xf0,
	0x1f, 0x00, 0x05, 0x00, 0x01, 0xff, 0x89, 0x99, 0x3d, 0x1d, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
	0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
}

// tinyWAV returns a valid mono 8 kHz 16-bit WAV of 8 samples.
func tinyWAV() []byte {
	samples := []int16{0, 1000, 2000, 1000, 0, -1000, -2000, -1000}
	var b bytes.Buffer
	le := func(v any) { _ = binary.Write(&b, binary.LittleEndian, v) }
	dataLen := uint32(len(samples) * 2)
	b.WriteString("RIFF")
	le(36 + dataLen)
	b.WriteString("WAVEfmt ")
	le(uint32(16))
	le(uint16(1))        // PCM
	le(uint16(1))        // mono
	le(uint32(8000))     // sample rate
	le(uint32(8000 * 2)) // byte rate
	le(uint16(2))        // block align
	le(uint16(16))       // bits per sample
	b.WriteString("data")
	le(dataLen)
	le(samples)
	return b.Bytes()
}

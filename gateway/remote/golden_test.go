package remote

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"net/http/httptest"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
)

var updateGolden = flag.Bool("update", false, "rewrite the gateway's frames in testdata/transcript.txt from what it writes")

// TestGolden_Transcript replays testdata/transcript.txt against a real
// Server over a raw WebSocket: each "-> " line is a frame the translator
// sends, each "<- " line the frame the gateway must write next (compared as
// JSON values). Every line must also appear verbatim in
// docs/gateway-protocol.md, so the documented frames are the ones the code
// writes.
func TestGolden_Transcript(t *testing.T) {
	lines := readTranscript(t, "testdata/transcript.txt")
	srv := NewServer(runner.NewLocal(nil), &ServerOptions{Token: "s3cret", Info: PeerInfo{Name: "acp-agent gateway", Version: "1.0.0"}})
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		ts.Close()
	})
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(ts.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	var out []string
	realID := ""
	for i, line := range lines {
		dir, frame, _ := strings.Cut(line, " ")
		switch dir {
		case "->":
			if realID != "" {
				frame = strings.ReplaceAll(frame, docCallID, realID)
			}
			if err := ws.WriteMessage(websocket.TextMessage, []byte(frame)); err != nil {
				t.Fatalf("line %d: sending: %v", i+1, err)
			}
			out = append(out, line)
		case "<-":
			_ = ws.SetReadDeadline(time.Now().Add(30 * time.Second))
			_, got, err := ws.ReadMessage()
			if err != nil {
				t.Fatalf("line %d: want %s, read: %v", i+1, frame, err)
			}
			// Tool call ids are random: the transcript shows docCallID.
			if id := callIDPattern.Find(got); id != nil {
				realID = string(id)
			}
			got = callIDPattern.ReplaceAll(got, []byte(docCallID))
			out = append(out, "<- "+string(got))
			if *updateGolden {
				t.Logf("<- %s", got)
				continue
			}
			var g, w any
			if err := json.Unmarshal([]byte(frame), &w); err != nil {
				t.Fatalf("line %d: the transcript's frame is no JSON: %v", i+1, err)
			}
			if err := json.Unmarshal(got, &g); err != nil || !reflect.DeepEqual(g, w) {
				t.Fatalf("line %d: the gateway wrote\n%s\nwant\n%s", i+1, got, frame)
			}
		default:
			t.Fatalf("line %d: starts with %q, want -> or <-", i+1, dir)
		}
	}
	if *updateGolden {
		if err := os.WriteFile("testdata/transcript.txt", []byte(strings.Join(out, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	doc, err := os.ReadFile("../../docs/gateway-protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range lines {
		if !strings.Contains(string(doc), line) {
			t.Errorf("line %d of testdata/transcript.txt is not in docs/gateway-protocol.md:\n%s", i+1, line)
		}
	}
}

// docCallID stands for the random tool call id in the transcript.
const docCallID = "call_7f3a9c01d2e4b586"

var callIDPattern = regexp.MustCompile(`call_[0-9a-f]{16}`)

func readTranscript(t *testing.T, name string) []string {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			lines = append(lines, l)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

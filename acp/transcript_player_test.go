package acp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// The player of TestTranscripts (transcript_test.go): pacing, normalization
// and the comparison of JSON lines.

// transcriptPlayer drives one transcript: it sends the client's lines, reads the
// agent's, keeps track of the calls each side waits for, and normalizes.
type transcriptPlayer struct {
	t     *testing.T
	lines <-chan string
	got   []string // the agent's lines so far, normalized
	from  int      // index in got of the first line since the last send

	pending   map[string]bool // ids (JSON text) of client requests not answered
	anonymous int             // responses still owed to lines that are not requests
	asked     []string        // ids (JSON text) of agent requests not answered
	await     any             // the #await pattern before the next line, or nil

	literal string            // the client section, to tell its own ids from the agent's
	subst   map[string]string // placeholder → actual value
	names   map[string]string // actual value → placeholder
	count   map[string]int    // placeholder prefix → how many so far
}

func newTranscriptPlayer(t *testing.T, tr *transcript, lines <-chan string) *transcriptPlayer {
	cwd := t.TempDir()
	p := &transcriptPlayer{t: t, lines: lines, pending: map[string]bool{}, literal: strings.Join(tr.client, "\n"),
		subst: map[string]string{}, names: map[string]string{}, count: map[string]int{}}
	p.name("$CWD", jsonStringBody(cwd))
	return p
}

// jsonStringBody is s as it appears between the quotes of a JSON string.
func jsonStringBody(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

func (p *transcriptPlayer) name(placeholder, actual string) {
	p.subst[placeholder] = actual
	p.names[actual] = placeholder
}

var placeholderPattern = regexp.MustCompile(`\$[A-Z]+[0-9]*`)

// fill replaces the placeholders of a client line by their values.
func (p *transcriptPlayer) fill(line string) string {
	p.t.Helper()
	return placeholderPattern.ReplaceAllStringFunc(line, func(ph string) string {
		v, ok := p.subst[ph]
		if !ok {
			p.t.Fatalf("client line %s: %s stands for nothing the agent has written yet", line, ph)
		}
		return v
	})
}

// rpcShape is the JSON-RPC shape of a line, as far as pacing needs it.
type rpcShape struct {
	ID     json.RawMessage `json:"id"`
	Method *string         `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

func (m rpcShape) isResponse() bool { return m.Method == nil && (m.Result != nil || m.Error != nil) }

// send writes one client line and records what it makes the agent owe.
func (p *transcriptPlayer) send(w io.Writer, line string) {
	p.t.Helper()
	var m rpcShape
	switch err := json.Unmarshal([]byte(line), &m); {
	case err != nil || (m.Method == nil && !m.isResponse()):
		p.anonymous++ // a parse error, a batch, a "Method" key: answered by the framing layer
	case m.isResponse():
		id := compactJSON(m.ID)
		i := slices.Index(p.asked, id)
		if i < 0 {
			p.t.Fatalf("client line %s answers no request of the agent's (asked: %v)", line, p.asked)
		}
		p.asked = slices.Delete(p.asked, i, i+1)
	case m.ID != nil && string(m.ID) != "null":
		p.pending[compactJSON(m.ID)] = true
	case m.ID != nil: // "id": null is not a valid request id: -32600
		p.anonymous++
	}
	p.from = len(p.got)
	if _, err := io.WriteString(w, line+"\n"); err != nil {
		p.t.Fatalf("writing %s: %v", line, err)
	}
}

func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// awaitNext sets the #await pattern of the next client line.
func (p *transcriptPlayer) awaitNext(i int, pattern string) {
	p.t.Helper()
	dec := json.NewDecoder(strings.NewReader(pattern))
	dec.UseNumber()
	if err := dec.Decode(&p.await); err != nil {
		p.t.Fatalf("client line %d: #await takes a JSON value: %v", i+1, err)
	}
}

// wait waits until the next client line may be sent (see TestTranscripts).
func (p *transcriptPlayer) wait() {
	p.t.Helper()
	deadline := time.NewTimer(transcriptWait)
	defer deadline.Stop()
	pattern := p.await
	p.await = nil
	checked := p.from
	for {
		if pattern != nil {
			for ; checked < len(p.got); checked++ {
				if containsJSON(decodeLine(p.got[checked]), pattern) {
					return
				}
			}
		} else if (len(p.pending) == 0 && p.anonymous == 0) || len(p.asked) > 0 {
			return
		}
		select {
		case l, ok := <-p.lines:
			if !ok {
				p.t.Fatalf("the agent's output ended while the client waited; it wrote:\n%s", strings.Join(p.got, "\n"))
			}
			p.read(l)
		case <-deadline.C:
			what := fmt.Sprintf("responses to %v", slices.Sorted(maps.Keys(p.pending)))
			if pattern != nil {
				b, _ := json.Marshal(pattern)
				what = "a line containing " + string(b)
			}
			p.t.Fatalf("no %s within %v; the agent wrote:\n%s", what, transcriptWait, strings.Join(p.got, "\n"))
		}
	}
}

// drain reads the agent's lines until its output ends (after Serve).
func (p *transcriptPlayer) drain() {
	p.t.Helper()
	deadline := time.NewTimer(transcriptWait)
	defer deadline.Stop()
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				return
			}
			p.read(l)
		case <-deadline.C:
			p.t.Fatalf("the agent's output did not end within %v after the end of input", transcriptWait)
		}
	}
}

// read records one agent line: it names the ids it introduces, keeps the
// line normalized, and settles what it answers.
func (p *transcriptPlayer) read(line string) {
	var v any
	if err := json.Unmarshal([]byte(line), &v); err != nil {
		p.t.Errorf("the agent wrote a line that is not JSON: %s", line)
		p.got = append(p.got, line)
		return
	}
	p.discover(v)
	norm := line
	// Longest values first, so no value is replaced inside a longer one.
	actual := slices.SortedFunc(maps.Keys(p.names), func(a, b string) int { return len(b) - len(a) })
	for _, a := range actual {
		norm = strings.ReplaceAll(norm, a, p.names[a])
	}
	norm = updatedAtPattern.ReplaceAllString(norm, `"updatedAt":"$$TIME"`)
	p.got = append(p.got, norm)

	var m rpcShape
	_ = json.Unmarshal([]byte(line), &m)
	switch {
	case m.isResponse():
		id := compactJSON(m.ID)
		if p.pending[id] {
			delete(p.pending, id)
		} else if p.anonymous > 0 {
			p.anonymous--
		}
	case m.Method != nil && m.ID != nil:
		p.asked = append(p.asked, compactJSON(m.ID))
	}
}

var updatedAtPattern = regexp.MustCompile(`"updatedAt":"[^"]*"`)

// idKeys are the members whose values the agent makes up, and the prefix
// of their placeholders.
var idKeys = map[string]string{"sessionId": "$SID", "toolCallId": "$CALL"}

// discover names every new sessionId and toolCallId value in v (walked in
// sorted key order, so the numbering is stable) that the client section
// does not spell out.
func (p *transcriptPlayer) discover(v any) {
	switch v := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if prefix, ok := idKeys[k]; ok {
				if s, ok := v[k].(string); ok && s != "" && p.names[s] == "" && !strings.Contains(p.literal, s) {
					p.count[prefix]++
					p.name(fmt.Sprintf("%s%d", prefix, p.count[prefix]), s)
				}
			}
			p.discover(v[k])
		}
	case []any:
		for _, e := range v {
			p.discover(e)
		}
	}
}

// decodeLine decodes a line as a JSON value (numbers kept as written), nil
// if it is not JSON.
func decodeLine(line string) any {
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil
	}
	return v
}

// containsJSON reports whether v contains pattern: every member of a
// pattern object is in v and contains the pattern's value; arrays and
// scalars are equal.
func containsJSON(v, pattern any) bool {
	po, ok := pattern.(map[string]any)
	if !ok {
		return reflect.DeepEqual(v, pattern)
	}
	vo, ok := v.(map[string]any)
	if !ok {
		return false
	}
	for k, pv := range po {
		if vv, ok := vo[k]; !ok || !containsJSON(vv, pv) {
			return false
		}
	}
	return true
}

// canonical is a line as canonical JSON (keys sorted), or the line itself
// if it is not JSON.
func canonical(line string) string {
	v := decodeLine(line)
	if v == nil {
		return line
	}
	b, err := json.Marshal(v)
	if err != nil {
		return line
	}
	return string(b)
}

// diffJSONLines compares want and got as JSON values, line by line, and
// returns "" or a diff of their canonical forms (a longest common
// subsequence: "-" only in want, "+" only in got).
func diffJSONLines(want, got []string) string {
	a := make([]string, len(want))
	for i, l := range want {
		a[i] = canonical(l)
	}
	b := make([]string, len(got))
	for i, l := range got {
		b[i] = canonical(l)
	}
	if slices.Equal(a, b) {
		return ""
	}
	// lcs[i][j]: the length of the longest common subsequence of a[i:], b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			fmt.Fprintf(&out, "  %s\n", a[i])
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			fmt.Fprintf(&out, "- %s\n", a[i])
			i++
		default:
			fmt.Fprintf(&out, "+ %s\n", b[j])
			j++
		}
	}
	return out.String()
}

package signin

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// helperEnv, set in a child's environment to the token file's path, makes
// TestHelperProcess act as a second agent process.
const helperEnv = "SIGNIN_TEST_HELPER_FILE"

// TestHelperProcess is an agent process of TestTokenSource_CrossProcess: it
// loads the grant of https://a.example/mcp from the token file, prints
// "ready", waits for a line on stdin, calls Token and prints the access token.
func TestHelperProcess(t *testing.T) {
	path := os.Getenv(helperEnv)
	if path == "" {
		t.Skip("helper process of TestTokenSource_CrossProcess")
	}
	fail := func(err error) { fmt.Println("error:", err); os.Exit(1) }
	st, err := OpenFile(path)
	if err != nil {
		fail(err)
	}
	rec, err := st.Latest(context.Background(), "https://a.example/mcp")
	if err != nil || rec == nil {
		fail(fmt.Errorf("no record: %v", err))
	}
	ts := NewTokenSource(st, nil, rec)
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		fail(err)
	}
	tok, err := ts.Token()
	if err != nil {
		fail(err)
	}
	fmt.Println(tok.AccessToken)
	os.Exit(0)
}

// TestTokenSource_CrossProcess: two agent processes sharing one token file
// refresh an expired token at once; exactly one refresh request reaches the
// token endpoint and both get its token.
func TestTokenSource_CrossProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	te := newTokenEndpoint(t, func(w http.ResponseWriter, form map[string]string, n int32) {
		// Hold the refresh a moment so that the other process surely asks
		// for the lock while this one holds it (this widens the race window;
		// the test asserts no timing).
		time.Sleep(300 * time.Millisecond)
		issue("rotated")(w, form, n)
	})
	path := filepath.Join(t.TempDir(), "oauth-tokens.json")
	st, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	saved(t, st, expiredRecord(te))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type child struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		out   *bufio.Reader
	}
	var children []child
	for range 2 {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
		cmd.Env = []string{helperEnv + "=" + path}
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		children = append(children, child{cmd, stdin, bufio.NewReader(stdout)})
	}
	readLine := func(c child) string {
		line, err := c.out.ReadString('\n')
		if err != nil {
			t.Fatalf("helper output: %q, %v", line, err)
		}
		return strings.TrimSpace(line)
	}
	for _, c := range children {
		if got := readLine(c); got != "ready" {
			t.Fatalf("helper said %q; want ready", got)
		}
	}
	for _, c := range children {
		io.WriteString(c.stdin, "go\n")
	}
	for i, c := range children {
		if got := readLine(c); got != "new-1" {
			t.Errorf("process %d got %q; want new-1", i, got)
		}
		if err := c.cmd.Wait(); err != nil {
			t.Errorf("process %d: %v", i, err)
		}
	}
	if n := te.requests.Load(); n != 1 {
		t.Fatalf("%d refresh requests reached the token endpoint; want 1", n)
	}
	if got, _ := st.Latest(ctx, "https://a.example/mcp"); got.Token.AccessToken != "new-1" || got.Token.RefreshToken != "rotated" {
		t.Fatal("the refreshed token is not in the file")
	}
}

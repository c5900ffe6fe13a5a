package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/internal/pgtest"
	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// Two agents on one PostgreSQL database (--store postgres://…) see each
// other's sessions and replay them whole.
func TestStore_TwoAgentsSharePostgres(t *testing.T) {
	t.Parallel()
	twoAgentsShare(t, pgtest.Start(t))
}

// The agent says which store it uses and that sign-in tokens are not kept
// with PostgreSQL; a session survives a restart.
func TestStore_PostgresRestartAndLoad(t *testing.T) {
	t.Parallel()
	url := pgtest.Start(t)
	fake := fakemodel.NewOpenAI(t)
	fake.Push(fakemodel.Turn{Text: "remembered"})
	a := storeAgent(t, url, fake.URL)
	cwd := t.TempDir()
	sid := a.newSession(cwd)
	if _, err := a.Prompt(t.Context(), sid, "remember this"); err != nil {
		t.Fatal(err)
	}
	if err := a.Stop(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	logs := a.stderr.String()
	if !strings.Contains(logs, "session store: PostgreSQL") || !strings.Contains(logs, "not kept across restarts") {
		t.Errorf("the log does not say the store and the tokens' fate:\n%s", logs)
	}
	b := storeAgent(t, url, fake.URL)
	res, err := b.Conn.ListSessions(t.Context(), acpsdk.ListSessionsRequest{})
	if err != nil || len(res.Sessions) != 1 || string(res.Sessions[0].SessionId) != sid {
		t.Fatalf("after a restart: %+v, %v", res, err)
	}
	from := len(b.Client.Updates())
	if _, err := b.Conn.LoadSession(t.Context(), acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(sid), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(transcript(b.Client.Updates()[from:]), "\n"); !strings.Contains(got, "agent:remembered") {
		t.Errorf("replay:\n%s", got)
	}
}

// A URL with a password is refused at start, without echoing it.
func TestStore_PostgresURLWithPasswordIsRefused(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, agentBin, "--store", "postgres://app:s3cret@127.0.0.1:1/acp")
	cmd.Env = []string{"HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	if err == nil || strings.Contains(string(out), "s3cret") || !strings.Contains(string(out), "PGPASSWORD") || !strings.Contains(string(out), ".pgpass") {
		t.Errorf("exit %v, output:\n%s\nwant a refusal saying PGPASSWORD or ~/.pgpass, without the password", err, out)
	}
}

package acp

import (
	"errors"
	"fmt"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/session"
	"github.com/seed02d3eb6b/acp-agent/session/store"
)

// The session core's errors state the fact; toRequestError adds what to do
// where the error leaves it to the front end.
func TestToRequestError_AddsWhatToDo(t *testing.T) {
	err := toRequestError(&session.NameTakenError{Name: "acp"})
	re, ok := err.(*acpsdk.RequestError)
	const cause = `mcpServers: server name "acp" is taken by an in-process server of the agent; choose another name`
	if !ok || re.Code != -32602 || re.Message != "Invalid params: "+cause || re.Data.(map[string]any)["error"] != cause {
		t.Errorf("toRequestError = %#v, want invalid params %q", err, cause)
	}
}

// A session store's errors state the fact; toRequestError adds what to do
// about the store's file (gateway.ErrorText), as a prompt whose turn could
// not be stored and session/load show it.
func TestToRequestError_StoreFileSaysWhatToDo(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("%w: %w", gateway.ErrTurnNotStored, &store.FileError{Path: "/state/sessions.db", Err: fmt.Errorf("%w: %w", errors.New("disk I/O error (778)"), store.ErrFull)}),
			"the turn could not be stored, so the conversation goes on without it: session store /state/sessions.db: disk I/O error (778): the disk may be full or the file not allowed to grow; once there is room, writes succeed again"},
		{fmt.Errorf("reading the session store: %w", &store.FileError{Path: "/state/sessions.db", Err: fmt.Errorf("%w (%w)", store.ErrDamaged, errors.New("database disk image is malformed (11)"))}),
			"reading the session store: session store /state/sessions.db: the database is damaged (database disk image is malformed (11)): move the file away (or restore it from a backup) and start acp-agent again, which creates a new empty store"},
	} {
		re, ok := toRequestError(tt.err).(*acpsdk.RequestError)
		if !ok || re.Code != -32603 || re.Message != "Internal error: "+tt.want || re.Data.(map[string]any)["error"] != tt.want {
			t.Errorf("toRequestError = %#v, want internal error %q", re, tt.want)
		}
	}
}

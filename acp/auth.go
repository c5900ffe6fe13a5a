package acp

import (
	"context"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/session"
)

// SignIn is the agent's sign-in for the model API key
// (https://agentclientprotocol.com/protocol/initialization#authentication):
// an auth method of type "terminal" (unstable in ACP v1), which the client
// runs as the agent's own program with Args in a terminal, such as
// "acp-agent login". Its funcs are called concurrently and must be safe for
// that.
type SignIn struct {
	// MethodID, Name and Description are the advertised method's id, name
	// and description.
	MethodID, Name, Description string
	// Args are appended to the agent's command line to sign in: ["login"].
	Args []string
	// Command is the agent's executable (os.Executable), advertised in
	// _meta["terminal-auth"] for clients that run that command instead of
	// the configured one. Empty leaves the _meta out.
	Command string
	// Check reports whether sign-in is done: nil when a key is available,
	// else an error saying what is missing. authenticate calls it (so a key
	// stored since startup counts). Nil means always done.
	Check func() error
	// Logout removes what sign-in stored (ACP logout). Nil means nothing to
	// remove.
	Logout func() error
	// Notice returns the message a new session starts with when a key is
	// missing (what to set, or the login command), or "". Nil means none.
	Notice func() string
}

// terminalAuthMeta is the _meta key of the terminal-auth convention that
// predates the "terminal" type (Zed): {command, args, label}.
const terminalAuthMeta = "terminal-auth"

// authOffer is how the sign-in method was offered to the client at its
// last initialize.
type authOffer int32

const (
	// authNotOffered: no sign-in, or a client that cannot run terminal
	// methods.
	authNotOffered authOffer = iota
	// authTerminal: as a "terminal" method, to a client that enabled
	// clientCapabilities.auth.terminal; it runs the method itself and must
	// not pass it to authenticate.
	authTerminal
	// authLegacy: to a client that only set _meta["terminal-auth"], the
	// convention that predates the type (Zed), as an agent method (no
	// type, which the schema lets an agent advertise to any client) whose
	// _meta["terminal-auth"] names the command: the client runs it and then
	// calls authenticate to check the result.
	authLegacy
)

// authMethods returns initialize's authMethods: the sign-in method, when
// there is one and the client can run terminal methods, as a "terminal"
// method to a client that enabled clientCapabilities.auth.terminal (the
// schema allows it to no other), else as an agent method carrying
// _meta["terminal-auth"] to a client that set that _meta key; else none.
// It records how the method was offered, for authenticate.
func (a *Agent) authMethods(caps acpsdk.ClientCapabilities) []acpsdk.AuthMethod {
	si := a.opts.SignIn
	legacy, _ := caps.Meta[terminalAuthMeta].(bool)
	var desc *string
	if si != nil && si.Description != "" {
		desc = &si.Description
	}
	switch {
	case si == nil || !caps.Auth.Terminal && !legacy:
		a.client.authOffer.Store(int32(authNotOffered))
		return []acpsdk.AuthMethod{}
	case caps.Auth.Terminal:
		a.client.authOffer.Store(int32(authTerminal))
		m := &acpsdk.AuthMethodTerminalInline{Id: si.MethodID, Name: si.Name, Args: si.Args, Description: desc}
		if si.Command != "" { // a client of both conventions runs either
			m.Meta = map[string]any{terminalAuthMeta: si.terminalAuth()}
		}
		return []acpsdk.AuthMethod{{Terminal: m}}
	}
	a.client.authOffer.Store(int32(authLegacy))
	m := &acpsdk.AuthMethodAgent{Id: si.MethodID, Name: si.Name, Description: desc}
	if si.Command != "" {
		m.Meta = map[string]any{terminalAuthMeta: si.terminalAuth()}
	}
	return []acpsdk.AuthMethod{{Agent: m}}
}

// terminalAuth is the _meta["terminal-auth"] of the sign-in method:
// {command, args, label}.
func (si *SignIn) terminalAuth() map[string]any {
	return map[string]any{"command": si.Command, "args": si.Args, "label": si.Name}
}

// authCapabilities advertises ACP logout when there is a sign-in.
func (a *Agent) authCapabilities() acpsdk.AgentAuthCapabilities {
	if a.opts.SignIn == nil {
		return acpsdk.AgentAuthCapabilities{}
	}
	return acpsdk.AgentAuthCapabilities{Logout: &acpsdk.LogoutCapabilities{}}
}

// authenticate serves authenticate
// (https://agentclientprotocol.com/protocol/initialization#authentication).
// A methodId the client was not offered is invalid_params, and so is the
// sign-in method offered as a "terminal" method: the client runs it and
// must not pass it to authenticate (the schema's AuthMethodTerminal). To a
// client of the older _meta["terminal-auth"] convention, which runs the
// command and then calls authenticate, it succeeds when SignIn.Check finds
// a key (the login stored one), else it is auth_required saying what to
// do.
func (a *Agent) authenticate(_ context.Context, p acpsdk.AuthenticateRequest) (acpsdk.AuthenticateResponse, error) {
	si := a.opts.SignIn
	if si == nil || p.MethodId != si.MethodID || authOffer(a.client.authOffer.Load()) == authNotOffered {
		return acpsdk.AuthenticateResponse{}, toRequestError(session.Invalidf("authenticate: methodId %q is not an auth method initialize advertised to this client", p.MethodId))
	}
	if authOffer(a.client.authOffer.Load()) == authTerminal {
		return acpsdk.AuthenticateResponse{}, toRequestError(session.Invalidf("authenticate: methodId %q is a terminal auth method: the client runs it in a terminal (%q with args %q) and must not pass it to authenticate; the sessions opened after it use the key it stored", p.MethodId, si.Name, si.Args))
	}
	if si.Check != nil {
		if err := si.Check(); err != nil {
			a.log.Info("authenticate: not signed in", "method", p.MethodId, "err", err)
			return acpsdk.AuthenticateResponse{}, acpsdk.NewAuthRequired(map[string]any{"message": err.Error()})
		}
	}
	a.log.Info("authenticate", "method", p.MethodId)
	return acpsdk.AuthenticateResponse{}, nil
}

// logout serves logout
// (https://agentclientprotocol.com/protocol/initialization#authentication):
// it removes the stored API key (SignIn.Logout). Keys from the environment
// stay. Without a sign-in it is method_not_found.
func (a *Agent) logout(context.Context, acpsdk.LogoutRequest) (acpsdk.LogoutResponse, error) {
	si := a.opts.SignIn
	if si == nil {
		return acpsdk.LogoutResponse{}, acpsdk.NewMethodNotFound(acpsdk.AgentMethodLogout)
	}
	if si.Logout != nil {
		if err := si.Logout(); err != nil {
			return acpsdk.LogoutResponse{}, acpsdk.NewInternalError(map[string]any{"message": "logout: " + err.Error()})
		}
	}
	a.log.Info("logout: stored API keys removed")
	return acpsdk.LogoutResponse{}, nil
}

// signInNotice returns the message a new session starts with, or "".
func (a *Agent) signInNotice() string {
	if si := a.opts.SignIn; si != nil && si.Notice != nil {
		return si.Notice()
	}
	return ""
}

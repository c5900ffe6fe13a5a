// Package runner is the agent loop of acp-agent and its in-process gateway.
//
// # The loop
//
// A [Runner] runs one prompt turn at a time per session: a model request,
// then the tool calls the model asked for, until the model ends the turn,
// the turn is cancelled or it reaches [Options].MaxTurnRequests. It reads
// the session's tools from a [gateway.Registry] at every model request, so a
// refreshed tool set is seen on the next one. A failing tool never ends a
// turn: its failure goes back to the model as an error result.
//
// # Permissions
//
// [Permissions] is the tool permissions policy (config "permissions"):
// [Permissions.Decide] allows, asks about or denies a tool by its name and
// its annotations. A denied tool is not offered to the model; the user's
// "allow always" answers are kept per session until [Runner.Forget].
//
// # Direct mode
//
// [Direct] is the provider used when no model is configured, with model ID
// [DirectModelID]: the user's /tools and /call commands drive the session's
// tools through the same path, and the same permissions, as a model's calls.
// The runner never reads a prompt's text for a command: the front end
// classifies it (session.Classify) and hands a [gateway.Command] in
// [gateway.SendRequest]; [Commands] is the table it is read against.
// Every Runner offers it, last unless configured.
//
// # The in-process gateway
//
// [Local] implements [gateway.Gateway] with a [gateway.Registry] and a
// [Runner]; [NewLocal] is what every session core uses.
package runner

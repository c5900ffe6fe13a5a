// Package environ builds the environment of the processes a session
// starts (stdio MCP servers, run_command): the agent's secrets never reach
// them unless the client passes them.
//
// [Policy.ChildEnv] builds a stdio MCP server's environment: the few
// variables of [Baseline] taken from the agent's own environment, then
// exactly the entry's variables, less the injection keys ([IsInjectionKey]:
// LD_PRELOAD, NODE_OPTIONS, …) that the config does not re-allow. Model API
// keys and other secrets of the agent never reach a child unless the client
// passes them.
package environ

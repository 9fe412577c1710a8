// The globals of the page agent's isolated world (agent.js), for its type check only
// (tsconfig.json beside it): the relay's binding, which exists only in that world, and the agent
// itself, which same-origin frames' agents reach on each other's windows. Agent is a JSDoc
// typedef in agent.js.
declare global {
  /** Added by the relay with `Runtime.addBinding` (capture/src/direct/mod.rs, `BINDING`). */
  var __cdpRelayObserve: ((payload: string) => void) | undefined;
  /** Defined by agent.js, once per world. */
  var __cdpRelayAgent: Agent | undefined;
  interface Window {
    __cdpRelayAgent?: Agent;
  }
}
export {};

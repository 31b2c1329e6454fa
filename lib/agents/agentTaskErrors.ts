/** The errors a multi-agent task gets when its agent goes away, written by the API and by the worker alike. */

/** A task of an agent that is no longer in `multiAgent.agents`: failed at the service's start, or by the worker. */
export const AGENT_REMOVED = 'agent removed from the configuration';

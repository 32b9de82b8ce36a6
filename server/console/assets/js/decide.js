// Decisions on paused threads, through the API the SDKs use: a resume
// of the thread (POST /threads/{id}/runs with command.resume) carrying a
// gate's decisions ({decisions: [...]}) or an interrupt's answer.

import { call, enc } from './api.js';

// RUN_MODES are the stream modes of a run the console starts, so its live
// page can show every node, call and token (debug) and the state (values).
export const RUN_MODES = ['debug', 'values'];

// decide answers interrupt intr of thread (one of several: keyed by its
// id) with body ({decisions} or {resume}) and returns the new run.
export function decide(thread, graphID, intr, body, several = false) {
  const value = body.decisions ? { decisions: body.decisions } : body.resume;
  const resume = several ? { [intr.id]: value } : value;
  return call('POST', `/threads/${enc(thread)}/runs`, { assistant_id: graphID, command: { resume }, stream_mode: RUN_MODES });
}

// toolSchemas maps the tools of an assistant to their parameter schemas.
export async function toolSchemas(graphID, signal) {
  const p = await call('GET', `/assistants/${enc(graphID)}/policy`, undefined, { signal });
  return Object.fromEntries(p.tools.map(t => [t.name, t.parameters]));
}

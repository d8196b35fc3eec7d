/** The shape every adapter's `run` and `resume` return, and the resume sequence under a lease. */

import type { AgentClient } from './client.js';
import type { ParkedRun } from './model.js';

/** The run ended; `result` is the SDK's own result object. */
export interface Finished<R> {
  readonly status: 'finished';
  readonly run: string;
  readonly result: R;
}

/** The run waits for decisions; its SDK state is stored on the server as parked run `parkedRun`. */
export interface Parked {
  readonly status: 'parked';
  readonly run: string;
  readonly parkedRun: string;
  readonly requestIds: readonly string[];
}

export type RunOutcome<R> = Finished<R> | Parked;

export function finished<R>(run: string, result: R): Finished<R> {
  return { status: 'finished', run, result };
}

export function parked(run: string, parkedRun: string, requestIds: readonly string[]): Parked {
  return { status: 'parked', run, parkedRun, requestIds: [...requestIds] };
}

/** What a closed resume records as its outcome. */
export function resumedSummary(outcome: RunOutcome<unknown>): string {
  return outcome.status === 'finished' ? 'finished' : `parked again as ${outcome.parkedRun}`;
}

/**
 * Claim `parkedId` for `owner`, run `body` with the claimed run, and close the claim.
 *
 * The claim is the server's: a run resumed already (or leased by a live resumer) is refused with
 * ConflictError before `body` runs, so a parked run is taken forward once. When `body` throws, the run
 * is marked failed with the error and the error goes on.
 */
export async function resumeLeased<R>(
  client: AgentClient,
  parkedId: string,
  options: { owner: string; leaseSeconds: number; body: (claimed: ParkedRun) => Promise<RunOutcome<R>> },
): Promise<RunOutcome<R>> {
  const claimed = await client.claimParked(parkedId, options.owner, options.leaseSeconds);
  let outcome: RunOutcome<R>;
  try {
    outcome = await options.body(claimed);
  } catch (error) {
    const failure = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    await client.finishParked(claimed.id, options.owner, { status: 'failed', outcome: failure.slice(0, 2000) });
    throw error;
  }
  await client.finishParked(claimed.id, options.owner, { outcome: resumedSummary(outcome) });
  return outcome;
}

// Shared plumbing for the nats.js conformance scenarios (run by conformance/test_natsjs.py).
//
// Every scenario is `node <script>.mjs <server url>` (or NATS_URL in the environment): it
// connects, runs, prints exactly one JSON line on stdout and exits 0; on any error it prints
// the error on stderr and exits 1; a scenario still running after its deadline exits 3.
import { connect } from "@nats-io/transport-node";
import { randomBytes } from "node:crypto";

export const URL = process.argv[2] || process.env.NATS_URL || "nats://127.0.0.1:4222";

/** A name unique to this run, safe for streams, buckets and subjects (upper case). Always
 * the same length for a prefix, so byte counts that include subjects are reproducible. */
export function uniq(prefix) {
  return `${prefix}_${randomBytes(6).toString("hex").toUpperCase()}`;
}

/**
 * Records every notification of `messages.status()` as it is emitted. Iterating status()
 * concurrently loses the ones still queued when the messages iterator stops (nats.js drops a
 * stopped iterator's queue), so this hooks the listener's push, which notify() calls
 * synchronously. `skip` names notification types to leave out; `annotate(n)` is what is
 * recorded for notification n.
 */
export function recordStatus(messages, skip = ["next", "heartbeat"], annotate = (v) => v) {
  const seen = [];
  const listener = messages.status();
  const push = listener.push.bind(listener);
  listener.push = (v) => {
    if (typeof v !== "function" && !skip.includes(v.type)) seen.push(annotate(v));
    push(v);
  };
  return seen;
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves with `p`, or rejects with `what timed out` after `ms`. */
export function within(ms, what, p) {
  let timer;
  const t = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

/** An error as the client surfaces it: class, message, API code/status when present. */
export function errInfo(err) {
  const out = { name: err?.constructor?.name ?? typeof err, message: String(err?.message ?? err) };
  if (typeof err?.apiError === "function") {
    const api = err.apiError();
    out.err_code = api.err_code ?? null;
    out.status = api.code ?? null;
  } else if (typeof err?.code === "number") {
    out.code = err.code;
  }
  return out;
}

/** Runs `fn(nc)` and returns its value, or errInfo of what it threw, as `{ok, value|error}`. */
export async function attempt(fn) {
  try {
    return { ok: true, value: await fn() };
  } catch (err) {
    return { ok: false, error: errInfo(err) };
  }
}

/**
 * Runs one scenario: connect to URL, `await fn(nc)`, print JSON.stringify(result) as the only
 * stdout line, close, exit 0. Errors exit 1, the deadline (default 12 s) exits 3.
 */
export async function scenario(name, fn, { deadlineMs = 12_000 } = {}) {
  const deadline = setTimeout(() => {
    process.stderr.write(`${name}: deadline of ${deadlineMs} ms exceeded\n`);
    process.exit(3);
  }, deadlineMs);
  let nc;
  let code = 0;
  try {
    nc = await connect({ servers: URL, timeout: 3_000, reconnect: false, name: `natsjs-${name}` });
    const result = await fn(nc);
    process.stdout.write(JSON.stringify(result) + "\n");
  } catch (err) {
    process.stderr.write(`${name} failed: ${err?.stack ?? err}\n`);
    if (err?.cause) process.stderr.write(`cause: ${err.cause?.stack ?? err.cause}\n`);
    code = 1;
  } finally {
    if (nc && !nc.isClosed()) {
      await within(2_000, "close", nc.close()).catch(() => {});
    }
    clearTimeout(deadline);
  }
  process.exit(code);
}

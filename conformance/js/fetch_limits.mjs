// Pull `fetch` bounded by `expires` and by `max_bytes`: a fetch with fewer messages than asked
// returns what is there when the request expires; an empty fetch ends empty after `expires`;
// a full batch ends at once; `max_bytes` caps a batch at the messages that fit (the request
// then ends with 409 Message Size Exceeds MaxBytes, which fetch surfaces as an error after
// the messages), a message larger than max_bytes alone gets nothing; `next()` on nothing is
// null. Independent fetches run concurrently, each on its own consumer, to keep this short.
import { AckPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { attempt, errInfo, recordStatus, scenario, uniq } from "./lib.mjs";

async function drain(iter) {
  const got = [];
  const statuses = recordStatus(iter);
  const start = Date.now();
  let error = null;
  try {
    for await (const m of iter) {
      got.push(m.seq);
      m.ack();
    }
  } catch (err) {
    error = errInfo(err);
  }
  return { seqs: got, statuses, ms: Date.now() - start, error };
}

/** Elapsed time as a coarse bucket so the result line stays deterministic. */
const when = (ms, expires) => (ms < expires * 0.7 ? "early" : ms < expires + 1500 ? "at_expiry" : "late");

scenario("fetch_limits", async (nc) => {
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);
  const stream = uniq("FETCH");
  const p = stream.toLowerCase();
  await jsm.streams.add({ name: stream, subjects: [`${p}.>`] });
  const out = {};
  try {
    // seqs 1-3 on .a (100 bytes), 4-8 on .f (100 bytes), 9-14 on .b (200 bytes), 15 on .c (1000)
    for (let i = 0; i < 3; i++) await js.publish(`${p}.a`, new Uint8Array(100));
    for (let i = 0; i < 5; i++) await js.publish(`${p}.f`, new Uint8Array(100));
    for (let i = 0; i < 6; i++) await js.publish(`${p}.b`, new Uint8Array(200));
    await js.publish(`${p}.c`, new Uint8Array(1000));
    const consumer = async (name, filter) => {
      await jsm.consumers.add(stream, { durable_name: name, ack_policy: AckPolicy.Explicit,
                                        filter_subject: `${p}.${filter}` });
      return await js.consumers.get(stream, name);
    };
    const [ca, ce, cf, cb, cc, cn] = await Promise.all([
      consumer("a", "a"), consumer("e", "none"), consumer("f", "f"), consumer("b", "b"),
      consumer("c", "c"), consumer("n", "none")]);

    const fetch = async (c, opts) => {
      const r = await drain(await c.fetch(opts));
      return { seqs: r.seqs, when: when(r.ms, opts.expires), error: r.error, statuses: r.statuses };
    };
    const nextEmpty = async () => {
      const t0 = Date.now();
      const r = await attempt(() => cn.next({ expires: 1000 }));
      return { ...r, when: when(Date.now() - t0, 1000) };
    };
    let rest;
    [out.partial, out.empty, out.full, out.max_bytes, out.too_big, out.next_empty, rest] = await Promise.all([
      // 3 there, ask for 10 with expires 1s: the 3, then the request expires
      fetch(ca, { max_messages: 10, expires: 1000 }),
      // nothing there: empty after expires
      fetch(ce, { max_messages: 5, expires: 1000 }),
      // a full batch ends without waiting for the expiry
      fetch(cf, { max_messages: 5, expires: 3000 }),
      // 700 bytes hold 2 of the 200-byte messages (with subject and reply)
      fetch(cb, { max_bytes: 700, expires: 2000 }).finally(() => { out.max_bytes_done = true; }),
      // 1000 bytes of payload never fit in 500
      fetch(cc, { max_bytes: 500, expires: 2000 }),
      nextEmpty(),
      // after the max_bytes fetch: the rest of .b, then the request expires
      (async () => {
        while (out.max_bytes_done !== true) await new Promise((r) => setTimeout(r, 10));
        return fetch(cb, { max_bytes: 10_000, expires: 1000 });
      })(),
    ]);
    delete out.max_bytes_done;
    out.max_bytes_rest = rest;
    out.info = {};
    for (const name of ["a", "b", "c", "n"]) {
      const ci = await jsm.consumers.info(stream, name);
      out.info[name] = { delivered: ci.delivered.stream_seq, num_pending: ci.num_pending,
                         num_ack_pending: ci.num_ack_pending, num_waiting: ci.num_waiting };
    }
  } finally {
    await jsm.streams.delete(stream).catch(() => {});
  }
  return out;
});

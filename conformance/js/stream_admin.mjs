// Stream and consumer management through jsm: purge by subject filter, by sequence and with
// keep; stream names / find by subject; stream update; consumer pause (messages held) and
// resume (delivered), consumer reset to a sequence (ADR-60) and the errors for an unknown
// consumer / stream.
import { AckPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { attempt, scenario, uniq } from "./lib.mjs";

scenario("stream_admin", async (nc) => {
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);
  const stream = uniq("ADMIN");
  const p = stream.toLowerCase();
  const out = {};
  const state = async () => {
    const s = (await jsm.streams.info(stream)).state;
    return { messages: s.messages, first_seq: s.first_seq, last_seq: s.last_seq };
  };
  try {
    await jsm.streams.add({ name: stream, subjects: [`${p}.>`], max_msgs_per_subject: 10 });
    // seq 1..12: a,b,c repeated
    for (let i = 1; i <= 12; i++) await js.publish(`${p}.${"abc"[(i - 1) % 3]}`, `m${i}`);
    out.purge_filter = (await jsm.streams.purge(stream, { filter: `${p}.b` })).purged;
    out.after_filter = await state();
    out.purge_seq = (await jsm.streams.purge(stream, { seq: 7 })).purged;
    out.after_seq = await state();
    out.purge_keep = (await jsm.streams.purge(stream, { keep: 1, filter: `${p}.a` })).purged;
    out.after_keep = await state();
    out.find = (await jsm.streams.find(`${p}.zz`)) === stream;
    out.names = [];
    for await (const n of jsm.streams.names(`${p}.a`)) out.names.push(n === stream ? "<stream>" : n);
    const upd = await jsm.streams.update(stream, { subjects: [`${p}.>`], max_msgs_per_subject: 3,
                                                   description: "updated" });
    out.update = { description: upd.config.description, max_msgs_per_subject: upd.config.max_msgs_per_subject };
    out.update_bad = await attempt(() => jsm.streams.update(stream, { storage: "memory" }));

    // pause / resume
    await jsm.consumers.add(stream, { durable_name: "p", ack_policy: AckPolicy.Explicit,
                                      filter_subject: `${p}.c` });
    const until = new Date(Date.now() + 60_000);
    const pr = await jsm.consumers.pause(stream, "p", until);
    out.pause = { paused: pr.paused, until_ok: Math.abs(Date.parse(pr.pause_until) - until.getTime()) < 5 };
    const pi = await jsm.consumers.info(stream, "p");
    out.paused_info = { paused: pi.paused, pause_remaining_gt_50s: pi.pause_remaining > 50e9 };
    const c = await js.consumers.get(stream, "p");
    // nothing while paused; meanwhile, neither server answers a reset of a consumer that
    // does not exist (hence the short request timeout)
    const quick = await jetstreamManager(nc, { timeout: 1000 });
    const held = [];
    [, out.reset_unknown] = await Promise.all([
      (async () => { for await (const m of await c.fetch({ max_messages: 5, expires: 1000 })) held.push(m.seq); })(),
      attempt(() => quick.consumers.reset(stream, "nope", 1)),
    ]);
    out.fetch_while_paused = held;
    const rr = await jsm.consumers.resume(stream, "p");
    out.resume = { paused: rr.paused, has_until: "pause_until" in rr };
    const got = [];
    for await (const m of await c.fetch({ max_messages: 2, expires: 2000 })) { got.push(m.seq); m.ack(); }
    out.fetch_after_resume = got;

    // reset to a sequence
    const rs = await attempt(async () => {
      const r = await jsm.consumers.reset(stream, "p", 9);
      return { reset_seq: r.reset_seq, delivered: r.delivered.stream_seq, ack_floor: r.ack_floor.stream_seq,
               num_pending: r.num_pending };
    });
    out.reset = rs;
    const again = [];
    for await (const m of await c.fetch({ max_messages: 2, expires: 2000 })) { again.push(m.seq); m.ack(); }
    out.fetch_after_reset = again;
    out.pause_unknown = await attempt(() => jsm.consumers.pause(stream, "nope", until));
    out.purge_unknown = await attempt(() => jsm.streams.purge(`${stream}X`));
  } finally {
    await jsm.streams.delete(stream).catch(() => {});
  }
  return out;
});

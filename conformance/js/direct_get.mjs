// Direct get (allow_direct streams) through jsm.direct: by sequence, last by subject, next by
// subject from a sequence, a missing message, batches (with a subject filter, with max_bytes)
// and multi-last for a set of subjects (also up to a sequence); the headers nats.js reads
// (Nats-Stream, Nats-Subject, Nats-Sequence, Nats-Num-Pending, Nats-Last-Sequence) surface as
// subject/seq/pending/lastSequence. Also jsm.streams.getMessage / deleteMessage and
// stream info with subjects_filter.
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { headers } from "@nats-io/nats-core";
import { attempt, scenario, uniq } from "./lib.mjs";

scenario("direct_get", async (nc) => {
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);
  const stream = uniq("DIRECT");
  const p = stream.toLowerCase();
  await jsm.streams.add({ name: stream, subjects: [`${p}.>`], allow_direct: true });
  const out = {};
  const sm = (m) => m === null ? null : ({
    subject: m.subject.slice(p.length + 1), seq: m.seq, data: new TextDecoder().decode(m.data),
    pending: m.pending, lastSequence: m.lastSequence, stream_ok: m.header.get("Nats-Stream") === stream,
    hdr: m.header.get("X-Test") || null,
  });
  const batch = async (iterP) => {
    const got = [];
    for await (const m of await iterP) got.push(sm(m));
    return got;
  };
  try {
    // seq: 1 a, 2 b, 3 a, 4 c, 5 b, 6 a, 7 c.x, 8 a
    const subs = ["a", "b", "a", "c", "b", "a", "c.x", "a"];
    for (let i = 0; i < subs.length; i++) {
      const h = headers();
      h.set("X-Test", `h${i + 1}`);
      await js.publish(`${p}.${subs[i]}`, `v${i + 1}`, { headers: h });
    }
    const d = jsm.direct;
    out.by_seq = sm(await d.getMessage(stream, { seq: 4 }));
    out.last_by_subj = sm(await d.getMessage(stream, { last_by_subj: `${p}.b` }));
    out.next_by_subj = sm(await d.getMessage(stream, { next_by_subj: `${p}.a`, seq: 4 }));
    out.next_wild = sm(await d.getMessage(stream, { next_by_subj: `${p}.c.>`, seq: 1 }));
    out.missing_seq = await attempt(async () => sm(await d.getMessage(stream, { seq: 99 })));
    out.missing_subj = await attempt(async () => sm(await d.getMessage(stream, { last_by_subj: `${p}.zz` })));
    out.batch_all = await batch(d.getBatch(stream, { seq: 2, batch: 3 }));
    out.batch_filtered = await batch(d.getBatch(stream, { seq: 2, batch: 10, next_by_subj: `${p}.a` }));
    out.batch_max_bytes = await batch(d.getBatch(stream, { seq: 1, batch: 10, max_bytes: 60 }));
    out.multi_last = await batch(d.getLastMessagesFor(stream, { multi_last: [`${p}.a`, `${p}.b`, `${p}.c.*`] }));
    out.multi_last_wild = await batch(d.getLastMessagesFor(stream, { multi_last: [`${p}.>`] }));
    out.multi_last_up_to = await batch(d.getLastMessagesFor(stream, { multi_last: [`${p}.a`, `${p}.b`], up_to_seq: 4 }));
    out.multi_last_none = await attempt(() => batch(d.getLastMessagesFor(stream, { multi_last: [`${p}.zz`] })));

    // the same reads through the STREAM.MSG.GET API, and a delete in between
    const g = await jsm.streams.getMessage(stream, { last_by_subj: `${p}.a` });
    out.msg_get = { seq: g.seq, subject: g.subject.slice(p.length + 1), data: g.string(),
                    hdr: g.header.get("X-Test") };
    out.delete_msg = await jsm.streams.deleteMessage(stream, 6);
    out.delete_again = await attempt(() => jsm.streams.deleteMessage(stream, 6));
    out.after_delete = sm(await d.getMessage(stream, { next_by_subj: `${p}.a`, seq: 4 }));
    out.get_deleted = await attempt(async () => sm(await d.getMessage(stream, { seq: 6 })));
    out.msg_get_deleted = await attempt(async () => (await jsm.streams.getMessage(stream, { seq: 6 }))?.seq ?? null);
    const si = await jsm.streams.info(stream, { subjects_filter: `${p}.>`, deleted_details: true });
    out.info = { messages: si.state.messages, num_deleted: si.state.num_deleted, deleted: si.state.deleted,
                 subjects: Object.fromEntries(Object.entries(si.state.subjects ?? {})
                   .map(([k, v]) => [k.slice(p.length + 1), v]).sort()) };
  } finally {
    await jsm.streams.delete(stream).catch(() => {});
  }
  return out;
});

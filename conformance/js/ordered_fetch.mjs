// An ordered consumer read with `fetch` batches over 2000 messages; between two batches its
// server-side consumer is deleted. The next fetch fails the way nats.js reports a pull to a
// consumer that no longer exists, the one after it recreates the consumer from the next
// stream sequence, and the batches together hold every message once, in order.
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { attempt, scenario, uniq } from "./lib.mjs";

const TOTAL = 2000;

scenario("ordered_fetch", async (nc) => {
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);
  const stream = uniq("ORDFETCH");
  const p = stream.toLowerCase();
  await jsm.streams.add({ name: stream, subjects: [`${p}.>`] });
  const out = { batches: [] };
  try {
    const acks = [];
    for (let i = 1; i <= TOTAL; i++) acks.push(js.publish(`${p}.s`, `m${i}`));
    await Promise.all(acks);
    const c = await js.consumers.get(stream, { name_prefix: "of", opt_start_seq: 101,
                                               deliver_policy: "by_start_sequence" });
    const seen = [];
    for (let round = 0; round < 8 && seen.at(-1) !== TOTAL; round++) {
      if (round === 2) {
        const ci = await c.info(true);
        out.deleted_name = ci.name;
        out.deleted = await jsm.consumers.delete(stream, ci.name);
      }
      const r = await attempt(async () => {
        const seqs = [];
        const dseqs = [];
        for await (const m of await c.fetch({ max_messages: 500, expires: 1000 })) {
          seqs.push(m.seq);
          dseqs.push(m.info.deliverySequence);
          if (m.seq === TOTAL) break; // the last one: no need to wait for the expiry
        }
        return { seqs, dseqs };
      });
      const name = (await c.info(true)).name;
      if (r.ok) {
        const { seqs, dseqs } = r.value;
        seen.push(...seqs);
        out.batches.push({ name, count: seqs.length, first: seqs[0] ?? null, last: seqs.at(-1) ?? null,
                           dseq_first: dseqs[0] ?? null, dseq_last: dseqs.at(-1) ?? null,
                           dseq_contiguous: dseqs.every((d, i) => i === 0 || d === dseqs[i - 1] + 1) });
      } else {
        out.batches.push({ name, error: r.error });
      }
    }
    out.in_order = seen.every((s, i) => s === 101 + i);
    out.count = seen.length;
  } finally {
    await jsm.streams.delete(stream).catch(() => {});
  }
  return out;
});

// Fast-ingest batch publishing (allow_batched) with nats.js's startFastIngest: a batch of 25
// messages committed with last(), a second one ended with end() (the end-of-batch marker is
// not stored); the terminal BatchAck of each and what the stream holds.
import { jetstreamManager } from "@nats-io/jetstream";
import { startFastIngest } from "@nats-io/jetstream/internal";
import { scenario, uniq } from "./lib.mjs";

scenario("fast_ingest", async (nc) => {
  const jsm = await jetstreamManager(nc);
  const stream = uniq("FASTI");
  const p = stream.toLowerCase();
  await jsm.streams.add({ name: stream, subjects: [`${p}.>`], allow_batched: true });
  const terminal = (a, fi) => ({ stream: a.stream === stream ? "<stream>" : a.stream,
                                  seq: a.seq, batch: a.batch === fi.batch, count: a.count });
  const steps = {};
  try {
    const fi = await startFastIngest(nc, `${p}.a`, "m1", { allowGaps: false, ackInterval: 5 });
    for (let i = 2; i < 25; i++) await fi.add(`${p}.a`, `m${i}`);
    steps.last = terminal(await fi.last(`${p}.b`, "m25"), fi);
    const fi2 = await startFastIngest(nc, `${p}.c`, "n1", { allowGaps: true });
    await fi2.add(`${p}.c`, "n2");
    steps.end = terminal(await fi2.end(), fi2);
    const si = await jsm.streams.info(stream);
    steps.state = { messages: si.state.messages, last_seq: si.state.last_seq,
                    num_subjects: si.state.num_subjects };
    const lm = await jsm.streams.getMessage(stream, { last_by_subj: `${p}.b` });
    steps.last_b = { seq: lm.seq, data: lm.string() };
  } finally {
    await jsm.streams.delete(stream).catch(() => {});
  }
  return steps;
});

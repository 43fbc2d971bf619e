// An ordered consumer reading a stream of 3000 messages; after 1000 of them its server-side
// consumer is deleted from another connection. nats.js notices (its next pull gets no
// responders, heartbeats go missing, consumer info says not found), recreates the consumer
// from the next stream sequence and still delivers every message exactly once and in order.
import { connect } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { URL, recordStatus, scenario, uniq, within } from "./lib.mjs";

const TOTAL = 3000;
const CUT = 1000;

scenario("ordered_reset", async (nc) => {
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);
  const stream = uniq("ORDERED");
  const p = stream.toLowerCase();
  await jsm.streams.add({ name: stream, subjects: [`${p}.>`] });
  const admin = await connect({ servers: URL, timeout: 3000, reconnect: false });
  const out = {};
  try {
    const acks = [];
    for (let i = 1; i <= TOTAL; i++) acks.push(js.publish(`${p}.${i % 7}`, `m${i}`));
    await Promise.all(acks);
    const c = await js.consumers.get(stream, { name_prefix: "oc" });
    const iter = await c.consume({ max_messages: 200, expires: 1000 });
    const statuses = recordStatus(iter);
    const adminJsm = await jetstreamManager(admin);
    let expected = 1;
    let outOfOrder = 0;
    let deleted = null;
    let firstAfterCut = null;
    let lastDeliverySeq = null;
    await within(11_000, "reading the stream", (async () => {
      for await (const m of iter) {
        if (m.seq !== expected || m.string() !== `m${expected}`) outOfOrder++;
        expected = m.seq + 1;
        if (m.seq === CUT) {
          const list = await adminJsm.consumers.list(stream).next();
          deleted = list.map((ci) => ci.name);
          for (const name of deleted) await adminJsm.consumers.delete(stream, name);
        }
        if (deleted && firstAfterCut === null && m.info.deliverySequence === 1) {
          firstAfterCut = { seq: m.seq, delivery: m.info.deliverySequence, pending: m.info.pending };
        }
        lastDeliverySeq = m.info.deliverySequence;
        if (m.seq === TOTAL) break;
      }
    })());
    await iter.close();
    out.read_up_to = expected - 1;
    out.out_of_order = outOfOrder;
    out.deleted = deleted.map((n) => n.replace(/^oc_\d+$/, "oc_N"));
    // where the new consumer starts depends on how much the old one had in flight; what
    // must hold is that it starts after the cut and carries the rest of the stream
    const f = firstAfterCut;
    out.new_consumer = f === null ? null : {
      starts_after_cut: f.seq > CUT,
      pending_is_rest: f.pending === TOTAL - f.seq,
      delivers_rest: lastDeliverySeq === TOTAL - f.seq + 1,
    };
    out.kinds = [...new Set(statuses.map((s) => s.type))];
    out.recreated = statuses.filter((s) => s.type === "ordered_consumer_recreated").length;
    const left = await adminJsm.consumers.list(stream).next();
    out.consumers_left = left.length;
  } finally {
    await jsm.streams.delete(stream).catch(() => {});
    await admin.close();
  }
  return out;
}, { deadlineMs: 14_000 });

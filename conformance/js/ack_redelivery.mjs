// Acknowledgement kinds through `consume()`: ack, nak (at once and with a delay), term,
// working (in progress) then ack, no ack at all (redelivered after ack_wait until max_deliver),
// and ackAck / a second ackAck on the same message. What each message's deliveries look like,
// and the consumer's counters at the end.
import { AckPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { attempt, scenario, sleep, uniq, within } from "./lib.mjs";

const until = (ms, what, cond) => within(ms, what, (async () => { while (!(await cond())) await sleep(20); })());

scenario("ack_redelivery", async (nc) => {
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);
  const stream = uniq("ACKS");
  const p = stream.toLowerCase();
  await jsm.streams.add({ name: stream, subjects: [`${p}.>`] });
  const out = {};
  try {
    const kinds = ["ack", "nak", "nak_delay", "term", "working", "none", "ackack"];
    for (const k of kinds) await js.publish(`${p}.${k}`, k);
    await jsm.consumers.add(stream, { durable_name: "r", ack_policy: AckPolicy.Explicit,
                                      ack_wait: 1_000_000_000, max_deliver: 2 });
    const c = await js.consumers.get(stream, "r");
    const iter = await c.consume({ max_messages: 20, expires: 2000 });
    const deliveries = Object.fromEntries(kinds.map((k) => [k, []]));
    const t0 = Date.now();
    const acks = {};
    (async () => {
      for await (const m of iter) {
        const k = m.string();
        const n = m.info.deliveryCount;
        deliveries[k].push({ n, redelivered: m.redelivered, pending: m.info.pending });
        switch (k) {
          case "ack": m.ack(); break;
          case "nak": if (n === 1) m.nak(); else m.ack(); break;
          case "nak_delay": if (n === 1) { m.nak(300); acks.nak_delay_at = Date.now(); } else {
            acks.nak_delay_ms = Date.now() - acks.nak_delay_at; m.ack(); } break;
          case "term": m.term("not for me"); break;
          case "working":
            m.working();
            setTimeout(() => { m.working(); }, 600);
            setTimeout(() => { m.ack(); }, 1200);
            break;
          case "none": break;
          case "ackack":
            acks.first = await attempt(() => m.ackAck());
            acks.second = await attempt(() => m.ackAck({ timeout: 1000 }));
            break;
        }
      }
    })().catch(() => {});
    // "none" is redelivered once after ack_wait (1 s), then max_deliver (2) stops it
    await until(5000, "second delivery of the unacked message", () => deliveries.none.length === 2);
    await sleep(1300); // a third delivery would show up here; "working" got its ack by now
    await iter.close();
    const ci = await jsm.consumers.info(stream, "r");
    out.deliveries = Object.fromEntries(Object.entries(deliveries).map(([k, v]) =>
      [k, v.map((d) => `${d.n}${d.redelivered ? "r" : ""}`)]));
    out.nak_delay = acks.nak_delay_ms === undefined ? null
      : acks.nak_delay_ms >= 250 ? "after delay" : `too early (${acks.nak_delay_ms} ms)`;
    out.ackack = { first: acks.first, second: acks.second };
    // (the ack floor after a message ran out of deliveries is max_deliver_floor.mjs's subject)
    out.info = { delivered: { consumer_seq: ci.delivered.consumer_seq, stream_seq: ci.delivered.stream_seq },
                 num_ack_pending: ci.num_ack_pending, num_redelivered: ci.num_redelivered,
                 num_pending: ci.num_pending };
    out.elapsed_lt_5s = Date.now() - t0 < 5000;
  } finally {
    await jsm.streams.delete(stream).catch(() => {});
  }
  return out;
});

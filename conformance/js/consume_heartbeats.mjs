// `consumer.consume()` with idle heartbeats across a pause in publishing: the messages before
// the pause, idle heartbeats during it (carrying the last consumer/stream sequences, no missed
// heartbeats), and the messages published after the pause, all delivered and acked.
import { AckPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { recordStatus, scenario, sleep, uniq, within } from "./lib.mjs";

scenario("consume_heartbeats", async (nc) => {
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);
  const stream = uniq("CONSUMEHB");
  const p = stream.toLowerCase();
  await jsm.streams.add({ name: stream, subjects: [`${p}.>`] });
  const out = {};
  try {
    await jsm.consumers.add(stream, { durable_name: "w", ack_policy: AckPolicy.Explicit });
    const c = await js.consumers.get(stream, "w");
    const iter = await c.consume({ max_messages: 10, expires: 1000, idle_heartbeat: 500 });
    const got = [];
    const statuses = recordStatus(iter, ["next"], (s) => ({ ...s, at: got.length }));
    const readLoop = (async () => {
      for await (const m of iter) {
        // (m.info.pending is left out: it depends on whether the next publish was stored
        // before this message went out, a race on any server)
        got.push({ seq: m.seq, data: m.string(), redelivered: m.redelivered,
                   delivery: m.info.deliverySequence });
        if (got.length === 15) {
          await m.ackAck();
          break;
        }
        m.ack();
      }
    })();
    for (let i = 0; i < 5; i++) await js.publish(`${p}.x`, `before ${i}`);
    await within(3000, "first 5 messages", (async () => { while (got.length < 5) await sleep(20); })());
    // the pause: longer than several heartbeats and than a pull request's expiry
    await sleep(1800);
    for (let i = 0; i < 10; i++) await js.publish(`${p}.x`, `after ${i}`);
    await within(4000, "messages after the pause", readLoop);
    await iter.close();
    const heartbeats = statuses.filter((s) => s.type === "heartbeat");
    const hbDuringPause = heartbeats.filter((h) => h.at === 5);
    const other = {};
    for (const s of statuses.filter((s) => s.type !== "heartbeat")) {
      const k = s.type === "debug" ? `debug ${s.code} ${s.description}` : s.type;
      other[k] = (other[k] ?? 0) + 1;
    }
    const ci = await jsm.consumers.info(stream, "w");
    out.messages = got;
    out.heartbeats_in_pause_ge_2 = hbDuringPause.length >= 2;
    out.heartbeat_in_pause = hbDuringPause.length
      ? { consumer: hbDuringPause.at(-1).lastConsumerSequence,
          stream: hbDuringPause.at(-1).lastStreamSequence }
      : null;
    out.heartbeats_missed = other.heartbeats_missed ?? 0;
    out.other_statuses = Object.keys(other).filter((k) => k !== "next" && k !== "discard"
                                                          && k !== "heartbeats_missed").sort();
    out.info = { delivered: ci.delivered.stream_seq, ack_floor: ci.ack_floor.stream_seq,
                 num_pending: ci.num_pending, num_redelivered: ci.num_redelivered };
  } finally {
    await jsm.streams.delete(stream).catch(() => {});
  }
  return out;
});

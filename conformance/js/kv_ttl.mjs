// Per-message TTLs. A KV bucket with limit markers (markerTTL 1 s: allow_msg_ttl and
// subject_delete_marker_ttl): kv.create with a 1 s TTL; when it expires the server writes a
// MaxAge marker that a watcher sees as PURGE and that itself expires a second later. A plain
// stream with allow_msg_ttl: publish with ttl "1s" and "never", the stored Nats-TTL header,
// the expiry; an invalid ttl, and a ttl on a stream without allow_msg_ttl.
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { attempt, scenario, sleep, uniq, within } from "./lib.mjs";

const until = (ms, what, cond) => within(ms, what, (async () => { while (!(await cond())) await sleep(50); })());

scenario("kv_ttl", async (nc) => {
  const kvm = new Kvm(nc);
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);
  const bucket = uniq("kvttl");
  const kv = await kvm.create(bucket, { markerTTL: 1000, history: 2 });
  const stream = uniq("TTL");
  const p = stream.toLowerCase();
  const plain = uniq("NOTTL");
  const out = {};
  try {
    const st = await kv.status();
    const cfg = st.streamInfo.config;
    out.config = { allow_msg_ttl: cfg.allow_msg_ttl ?? null,
                   subject_delete_marker_ttl: cfg.subject_delete_marker_ttl ?? null,
                   markerTTL: st.markerTTL ?? null };
    const seen = [];
    const w = await kv.watch({ include: "updates" });
    (async () => {
      for await (const e of w) seen.push(`${e.key}:${e.operation}:${e.revision}`);
    })().catch(() => {});
    out.create_ttl = await attempt(() => kv.create("short", "lives 1s", "1s"));
    await kv.put("keep", "k1");

    await jsm.streams.add({ name: stream, subjects: [`${p}.>`], allow_msg_ttl: true });
    const pa = await js.publish(`${p}.t`, "ttl", { ttl: "1s" });
    await js.publish(`${p}.n`, "never", { ttl: "never" });
    const m = await jsm.streams.getMessage(stream, { seq: pa.seq });
    out.ttl_header = m.header?.get("Nats-TTL") ?? null;
    out.bad_ttl = await attempt(() => js.publish(`${p}.x`, "bad", { ttl: "0.5s" }));
    await jsm.streams.add({ name: plain, subjects: [`${plain.toLowerCase()}.>`] });
    out.ttl_not_allowed = await attempt(() => js.publish(`${plain.toLowerCase()}.x`, "t", { ttl: "1s" }));

    await until(5000, "message ttl expiry", async () => (await jsm.streams.info(stream)).state.messages === 1);
    const s = (await jsm.streams.info(stream)).state;
    out.after_ttl = { messages: s.messages, first_seq: s.first_seq, last_seq: s.last_seq };
    // "short" expires after 1 s: a marker in its place
    await until(5000, "expiry of the TTL'd key", async () => (await kv.get("short"))?.operation !== "PUT");
    const marker = await kv.get("short");
    out.short_marker = marker === null ? null : { op: marker.operation, rev: marker.revision };
    const raw = await jsm.streams.getMessage(`KV_${bucket}`, { seq: marker?.revision ?? 0 });
    out.marker_headers = Object.fromEntries([...raw.header.keys()].sort().map((k) => [k, raw.header.get(k)]));
    // and the marker expires after its own 1 s
    await until(5000, "marker expiry", async () => (await kv.get("short")) === null);
    out.keep_after = (await kv.get("keep"))?.string() ?? null;
    await w.stop();
    out.watched = seen;
    const ks = (await jsm.streams.info(`KV_${bucket}`)).state;
    out.kv_state = { messages: ks.messages, first_seq: ks.first_seq, last_seq: ks.last_seq };
  } finally {
    await kv.destroy().catch(() => {});
    await jsm.streams.delete(stream).catch(() => {});
    await jsm.streams.delete(plain).catch(() => {});
  }
  return out;
});

// KV watchers: `include: "history"` (every stored revision, then live updates), the default
// watcher (last value per key), `updates` only, a key-filtered watcher that ignores deletes;
// live puts, deletes and purges arrive as the exact sequence of operations. Also create /
// update with a wrong revision, history() and keys().
import { Kvm } from "@nats-io/kv";
import { attempt, scenario, sleep, uniq, within } from "./lib.mjs";

const entry = (e) => ({ key: e.key, op: e.operation, value: e.string(), rev: e.revision,
                        delta: e.delta ?? null, update: e.isUpdate ?? null });

/** Collects watch entries; `settled()` resolves once `n` entries have arrived. */
function collect(iter) {
  const got = [];
  const loop = (async () => { for await (const e of iter) got.push(entry(e)); })();
  return {
    got,
    loop,
    until: (n, what) => within(4000, what, (async () => { while (got.length < n) await sleep(10); })()),
  };
}

scenario("kv_watch", async (nc) => {
  const kvm = new Kvm(nc);
  const bucket = uniq("kvw");
  const kv = await kvm.create(bucket, { history: 5 });
  const out = {};
  try {
    await kv.put("a", "a1");
    await kv.put("a", "a2");
    await kv.put("b", "b1");
    await kv.put("c.x", "c1");
    await kv.delete("b");
    await kv.put("a", "a3");

    const hist = collect(await kv.watch({ include: "history" }));
    const last = collect(await kv.watch());
    const upd = collect(await kv.watch({ include: "updates" }));
    const filt = collect(await kv.watch({ key: "a", ignoreDeletes: true }));
    await hist.until(6, "history watcher initial entries");
    await last.until(3, "last-value watcher initial entries");
    await filt.until(1, "filtered watcher initial entry");
    out.initial = { history: hist.got.slice(), last: last.got.slice(), filtered: filt.got.slice(),
                    updates: upd.got.length };

    await kv.put("b", "b2");
    await kv.delete("a");
    await kv.put("c.x", "c2");
    await kv.purge("c.x");
    await kv.put("a", "a4");
    await hist.until(11, "history watcher live entries");
    await last.until(8, "last-value watcher live entries");
    await upd.until(5, "updates watcher live entries");
    await filt.until(2, "filtered watcher live entries");
    await sleep(150); // anything extra would show up here
    out.live = { history: hist.got.slice(6), last: last.got.slice(3), updates: upd.got.slice(),
                 filtered: filt.got.slice(1) };

    out.create_existing = await attempt(() => kv.create("a", "x"));
    out.create_deleted = await attempt(async () => {
      await kv.delete("b");
      return await kv.create("b", "b3");
    });
    out.update_wrong = await attempt(() => kv.update("a", "x", 1));
    out.update_right = await attempt(async () => {
      const e = await kv.get("a");
      return await kv.update("a", "a5", e.revision);
    });
    out.get_old_revision = entry(await kv.get("a", { revision: 2 }));
    const h = await kv.history({ key: "a" });
    out.history_a = [];
    for await (const e of h) out.history_a.push(entry(e));
    out.keys = [];
    for await (const k of await kv.keys()) out.keys.push(k);
    out.keys.sort();
    const st = await kv.status();
    out.status = { values: st.values, history: st.history, bucket_ok: st.bucket === bucket };
  } finally {
    await kv.destroy().catch(() => {});
  }
  return out;
});

// Object store: put a multi-chunk object and a small one, get them back (data and digest),
// a link to an object in the same bucket and to one in another bucket, get through each link,
// a link to a whole store, info/list, links of links and links to deleted objects rejected,
// delete, and the same reads afterwards.
import { Objm } from "@nats-io/obj";
import { attempt, scenario, uniq } from "./lib.mjs";
import { createHash } from "node:crypto";

const sha = (b) => "SHA-256=" + createHash("sha256").update(b).digest("base64")
  .replace(/\+/g, "-").replace(/\//g, "_");

function data(n, seed) {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (i * 31 + seed) & 0xff;
  return b;
}

const info = (i) => i === null ? null : ({
  name: i.name, bucket: i.bucket.replace(/^OBJ\w+?_(A|B)$/, "$1"), size: i.size,
  chunks: i.chunks, digest: i.digest, deleted: i.deleted ?? false,
  link: i.options?.link ? { bucket: i.options.link.bucket.replace(/^OBJ\w+?_(A|B)$/, "$1"),
                            name: i.options.link.name ?? null } : null,
  max_chunk_size: i.options?.max_chunk_size ?? null, description: i.description ?? null,
  metadata: i.metadata ?? null,
});

async function read(os, name) {
  const r = await os.get(name);
  if (r === null) return null;
  const chunks = [];
  for await (const c of r.data) chunks.push(c);
  const err = await r.error;
  const buf = Buffer.concat(chunks);
  return { info: info(r.info), size: buf.length, sha: sha(buf), error: err ? String(err.message) : null };
}

scenario("obj_links", async (nc) => {
  const objm = new Objm(nc);
  const base = uniq("OBJ");
  const a = await objm.create(`${base}_A`);
  const b = await objm.create(`${base}_B`);
  const out = {};
  try {
    const big = data(300_000, 7);
    const small = data(1000, 3);
    out.put_big = info(await a.putBlob({ name: "big.bin", description: "three chunks",
                                         metadata: { k: "v" } }, big));
    out.put_small = info(await b.putBlob({ name: "dir/small.bin", options: { max_chunk_size: 256 } }, small));
    out.expected = { big: sha(big), small: sha(small) };
    out.get_big = await read(a, "big.bin");
    out.get_small = await read(b, "dir/small.bin");
    out.link_same = info(await a.link("big.link", await a.info("big.bin")));
    out.link_other = info(await a.link("small.link", await b.info("dir/small.bin")));
    out.get_link_same = await read(a, "big.link");
    out.get_link_other = await read(a, "small.link");
    out.link_store = info(await a.linkStore("b.store", b));
    out.link_of_link = await attempt(async () => info(await a.link("bad", await a.info("big.link"))));
    out.list_a = (await a.list()).map(info).sort((x, y) => x.name.localeCompare(y.name));
    out.blob_through_link = sha(await a.getBlob("small.link"));
    out.empty = info(await b.putBlob({ name: "empty" }, new Uint8Array(0)));
    out.get_empty = await read(b, "empty");
    out.missing = await read(a, "nope");
    out.delete_small = (await b.delete("dir/small.bin")).success;
    out.info_deleted = info(await b.info("dir/small.bin"));
    out.get_deleted = await attempt(() => read(b, "dir/small.bin"));
    out.get_dangling_link = await attempt(() => read(a, "small.link"));
    out.link_to_deleted = await attempt(async () => info(await a.link("bad2", await b.info("dir/small.bin"))));
    const st = await a.status();
    out.status_a = { sealed: st.sealed, backingStore: st.backingStore, size: st.size };
  } finally {
    await a.destroy().catch(() => {});
    await b.destroy().catch(() => {});
  }
  return out;
});

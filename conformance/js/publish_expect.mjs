// JetStream publish with every `expect` option (Nats-Expected-Stream, -Last-Sequence,
// -Last-Msg-Id, -Last-Subject-Sequence, -Last-Subject-Sequence-Subject) and msgID
// de-duplication: the PubAck of each success and the error nats.js surfaces for each failure.
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { attempt, scenario, uniq } from "./lib.mjs";

scenario("publish_expect", async (nc) => {
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);
  const stream = uniq("PUBEXP");
  const p = stream.toLowerCase();
  await jsm.streams.add({ name: stream, subjects: [`${p}.>`] });
  const ack = (pa) => ({ stream: pa.stream === stream ? "<stream>" : pa.stream, seq: pa.seq,
                         duplicate: pa.duplicate });
  const pub = async (subj, data, opts) => attempt(async () => ack(await js.publish(subj, data, opts)));
  const steps = {};
  try {
    steps.first = await pub(`${p}.a`, "1", { msgID: "m1", expect: { streamName: stream, lastSequence: 0 } });
    steps.dup = await pub(`${p}.a`, "1 again", { msgID: "m1" });
    steps.last_seq_ok = await pub(`${p}.b`, "2", { msgID: "m2", expect: { lastSequence: 1 } });
    steps.last_seq_bad = await pub(`${p}.b`, "x", { expect: { lastSequence: 1 } });
    steps.last_msgid_ok = await pub(`${p}.a`, "3", { msgID: "m3", expect: { lastMsgID: "m2" } });
    steps.last_msgid_bad = await pub(`${p}.a`, "x", { expect: { lastMsgID: "m1" } });
    steps.stream_ok = await pub(`${p}.c`, "4", { expect: { streamName: stream } });
    steps.stream_bad = await pub(`${p}.c`, "x", { expect: { streamName: "NOPE" } });
    // a.* holds seqs 1 and 3, b 2, c 4
    steps.subj_seq_ok = await pub(`${p}.a`, "5", { expect: { lastSubjectSequence: 3 } });
    steps.subj_seq_bad = await pub(`${p}.a`, "x", { expect: { lastSubjectSequence: 3 } });
    steps.subj_seq_zero_new = await pub(`${p}.d`, "6", { expect: { lastSubjectSequence: 0 } });
    steps.subj_seq_zero_bad = await pub(`${p}.d`, "x", { expect: { lastSubjectSequence: 0 } });
    steps.subj_seq_subject_ok = await pub(`${p}.e`, "7", {
      expect: { lastSubjectSequence: 6, lastSubjectSequenceSubject: `${p}.d` } });
    steps.subj_seq_subject_bad = await pub(`${p}.e`, "x", {
      expect: { lastSubjectSequence: 1, lastSubjectSequenceSubject: `${p}.*` } });
    steps.combined_ok = await pub(`${p}.a`, "8", {
      msgID: "m8", expect: { streamName: stream, lastSequence: 7, lastSubjectSequence: 5 } });
    steps.combined_bad_seq = await pub(`${p}.a`, "x", {
      msgID: "m9", expect: { streamName: stream, lastSequence: 7, lastSubjectSequence: 8 } });
    // the failed m9 was not stored, so the id is still free
    steps.after_failures = await pub(`${p}.a`, "9", { msgID: "m9", expect: { lastSequence: 8 } });
    steps.dup_of_stored = await pub(`${p}.z`, "dup", { msgID: "m8" });
    const si = await jsm.streams.info(stream);
    steps.state = { messages: si.state.messages, first_seq: si.state.first_seq,
                    last_seq: si.state.last_seq, num_subjects: si.state.num_subjects };
    const lm = await jsm.streams.getMessage(stream, { last_by_subj: `${p}.a` });
    steps.last_a = { seq: lm.seq, data: lm.string(), msgid: lm.header?.get("Nats-Msg-Id") ?? null };
  } finally {
    await jsm.streams.delete(stream).catch(() => {});
  }
  return steps;
});

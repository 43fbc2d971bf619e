/*
 * loadgen: a native NATS / JetStream load generator on the C client (Debian's libnats-dev),
 * so that benchmark figures are bound by the server, not by a Python client.
 *
 * Built and driven by scripts/bench_native.py; usable by hand:
 *
 *   cc -O2 -o loadgen scripts/loadgen/loadgen.c \
 *       $(pkg-config --cflags --libs libnats) -lpthread
 *   ./loadgen -s nats://127.0.0.1:4222 -m js-pub-async -n 20000 -z 128 -S memory
 *
 * Modes (what `nats bench` does):
 *   pub           core publish, N publishers, then a flush (PING/PONG) each
 *   pubsub        core publish, N publishers x M subscribers (each subscriber gets every message)
 *   reqrep        request/reply, N requesters, M responders in one queue group
 *   js-pub-sync   JetStream publish, one in flight per publisher
 *   js-pub-async  JetStream publish, up to -w in flight per publisher
 *   js-pull       pull consume of a pre-filled stream, fetch -w + ack each, M consumers on one durable
 *   js-push       push consume of a pre-filled stream, ack each (M > 1: one deliver group)
 *   kv-put        KV put, N writers, over 1,000 keys
 *   kv-get        KV get of 1,000 pre-written keys, N readers
 *   kv-watch      a watcher over the whole bucket receiving its -N initial values (ops = keys)
 *   kv-keys       listing the bucket's -N keys (ops = keys)
 *
 * Scale options (scripts/bench_scale.py), all set up before "ready", so not measured:
 *   -B N   messages already stored before the measured section (js-pub-*: pre-filled; js-pull /
 *          js-push: the stream holds -n + N and -n of them are consumed)
 *   -J N   publish round-robin over N subjects (loadgen.s.<i>) instead of one, pre-fill included
 *   -L N   the stream's max_msgs_per_subject
 *   -C N   N idle durable consumers on the stream besides any measured one; -P pull|push picks
 *          their kind (push: a deliver subject nobody listens on), -F gives each a filter that
 *          matches none of the published subjects
 *   -X N   N idle connections, each with one subscription on its own subject
 *   -N N   KV keys written before the measured section (kv-*; default 1,000): put and get go
 *          over these keys, watch and keys cover all of them
 *
 * Protocol with the driver: after setup (connections, stream, pre-fill) it prints "ready" on
 * stdout and waits for a line on stdin; then it runs the measured section and prints one JSON
 * line with {"ops", "seconds", "p50_us", "p99_us", "errors", ...}; then it cleans up (deletes the
 * stream or bucket unless -k) and exits. Without -i it starts at once (no handshake).
 *
 * -n is the total number of operations (published / requested / consumed messages), split
 * between the N publishers. -z is the payload size (>= 16 bytes: the first 8 carry a monotonic
 * timestamp for latency). -H adds two headers to every published message. Connections that
 * wait for one round trip at a time (requesters, responders, sync publishers, KV) write at once;
 * the others let the client batch writes; -A makes consumers (acks, fetches) write at once too.
 */
#define _GNU_SOURCE
#include <nats/nats.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define STREAM "LOADGEN"
#define SUBJECT_PREFIX "loadgen"
#define BUCKET "LOADGENKV"

static const char *url = "nats://127.0.0.1:4222";
static const char *mode = "pub";
static long count = 10000;
static int size = 128;
static int npubs = 1;
static int nsubs = 1;
static int window = 256;
static int headers = 0;
static int keep = 0;
static int handshake = 0;
static int asap_consumers = 0;
static long base = 0;
static long nsubjects = 1;
static long per_subject = 0;
static int nconsumers = 0;
static int consumer_push = 0;
static int consumer_filtered = 0;
static int nidle = 0;
static long kv_keys = 1000;
static atomic_long seq;  /* messages published so far (pre-fill included): picks the subject */
static jsStorageType storage = js_MemoryStorage;
static const char *storage_name = "memory";

static atomic_long errors;
static atomic_long consumed;
static int64_t t_start;
static atomic_llong t_end;  /* ns; the latest completion time seen */

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void note_end(void)
{
    long long t = now_ns(), prev = atomic_load(&t_end);
    while (t > prev && !atomic_compare_exchange_weak(&t_end, &prev, t))
        ;
}

static void die(const char *what, natsStatus s)
{
    fprintf(stderr, "loadgen: %s: %s\n", what, natsStatus_GetText(s));
    nats_PrintLastErrorStack(stderr);
    exit(1);
}

#define CHECK(what, call) do { natsStatus _s = (call); if (_s != NATS_OK) die(what, _s); } while (0)

/* ------------------------------------------------------------------ latencies */

typedef struct {
    int64_t *v;
    long n, cap;
    pthread_mutex_t mu;
} lat_t;

static lat_t lats = {NULL, 0, 0, PTHREAD_MUTEX_INITIALIZER};

static void lat_add_many(const int64_t *v, long n)
{
    pthread_mutex_lock(&lats.mu);
    if (lats.n + n > lats.cap) {
        lats.cap = (lats.n + n) * 2;
        lats.v = realloc(lats.v, lats.cap * sizeof(int64_t));
    }
    memcpy(lats.v + lats.n, v, n * sizeof(int64_t));
    lats.n += n;
    pthread_mutex_unlock(&lats.mu);
}

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;
    return (x > y) - (x < y);
}

static double percentile_us(double p)
{
    if (lats.n == 0) return -1;
    long i = (long) (p * (lats.n - 1) + 0.5);
    return lats.v[i] / 1000.0;
}

/* ------------------------------------------------------------------ helpers */

static natsConnection *connect_one(int asap)
{
    natsOptions *o;
    natsConnection *nc;
    CHECK("options", natsOptions_Create(&o));
    CHECK("url", natsOptions_SetURL(o, url));
    CHECK("pending", natsOptions_SetMaxPendingMsgs(o, 10000000));
    CHECK("reconnect", natsOptions_SetAllowReconnect(o, false));
    CHECK("timeout", natsOptions_SetTimeout(o, 10000));
    /* One round trip at a time: write at once (the default batches writes in a flusher
     * thread, which adds up to a millisecond to every request or reply). */
    if (asap) CHECK("send asap", natsOptions_SetSendAsap(o, true));
    CHECK("connect", natsConnection_Connect(&nc, o));
    natsOptions_Destroy(o);
    return nc;
}

static jsCtx *jetstream(natsConnection *nc, jsOptions *opts)
{
    jsCtx *js;
    CHECK("jetstream", natsConnection_JetStream(&js, nc, opts));
    return js;
}

static char *payload_new(void)
{
    char *p = malloc(size);
    for (int i = 0; i < size; i++) p[i] = 'a' + i % 26;
    return p;
}

static void stamp(char *p)
{
    int64_t t = now_ns();
    memcpy(p, &t, sizeof t);
}

static int64_t since_stamp(const char *p)
{
    int64_t t;
    memcpy(&t, p, sizeof t);
    return now_ns() - t;
}

static natsMsg *msg_new(const char *subj, const char *reply, char *payload)
{
    natsMsg *m;
    stamp(payload);
    CHECK("msg", natsMsg_Create(&m, subj, reply, payload, size));
    if (headers) {
        CHECK("header", natsMsgHeader_Set(m, "Loadgen-Header", "some-header-value-0123456789"));
        CHECK("header", natsMsgHeader_Set(m, "Nats-Expected-Stream", STREAM));
    }
    return m;
}

static long share(int i, int n)
{
    return count / n + (i < count % n ? 1 : 0);
}

static void create_stream(jsCtx *js)
{
    jsStreamConfig cfg;
    jsErrCode ec = 0;
    jsStreamInfo *si = NULL;
    const char *subjects[] = {SUBJECT_PREFIX ".>"};
    jsStreamConfig_Init(&cfg);
    cfg.Name = STREAM;
    cfg.Subjects = subjects;
    cfg.SubjectsLen = 1;
    cfg.Storage = storage;
    if (per_subject > 0) cfg.MaxMsgsPerSubject = per_subject;
    js_DeleteStream(js, STREAM, NULL, &ec);
    CHECK("add stream", js_AddStream(&si, js, &cfg, NULL, &ec));
    jsStreamInfo_Destroy(si);
}

static uint64_t stream_msgs(jsCtx *js)
{
    jsStreamInfo *si = NULL;
    jsErrCode ec = 0;
    CHECK("stream info", js_GetStreamInfo(&si, js, STREAM, NULL, &ec));
    uint64_t n = si->State.Msgs;
    jsStreamInfo_Destroy(si);
    return n;
}

/* messages a stream keeps after `total` round-robin publishes under the per-subject limit */
static uint64_t expected_stored(long total)
{
    if (per_subject <= 0) return (uint64_t) total;
    uint64_t n = 0;
    long each = total / nsubjects, extra = total % nsubjects;
    long a = each + 1 < per_subject ? each + 1 : per_subject;
    long b = each < per_subject ? each : per_subject;
    n = (uint64_t) extra * a + (uint64_t) (nsubjects - extra) * b;
    return n;
}

/* the subject of the next JetStream message: one, or round-robin over -J subjects */
static const char *next_subject(char *buf, size_t len)
{
    long k = atomic_fetch_add(&seq, 1);
    if (nsubjects <= 1) return SUBJECT_PREFIX ".bench";
    snprintf(buf, len, SUBJECT_PREFIX ".s.%ld", k % nsubjects);
    return buf;
}

/* ------------------------------------------------------------------ worker state */

typedef struct {
    int idx;
    natsConnection *nc;
    jsCtx *js;
    kvStore *kv;
    natsSubscription *sub;
    long todo;
    long done;
    int64_t *lat;
    long nlat, latcap;
    pthread_mutex_t mu;
    pthread_cond_t cv;
} worker_t;

static worker_t *workers_new(int n)
{
    worker_t *w = calloc(n, sizeof *w);
    for (int i = 0; i < n; i++) {
        w[i].idx = i;
        pthread_mutex_init(&w[i].mu, NULL);
        pthread_cond_init(&w[i].cv, NULL);
    }
    return w;
}

static void worker_lat(worker_t *w, int64_t ns)
{
    if (w->nlat == w->latcap) {
        w->latcap = w->latcap ? w->latcap * 2 : 1024;
        w->lat = realloc(w->lat, w->latcap * sizeof(int64_t));
    }
    w->lat[w->nlat++] = ns;
}

static void run_threads(worker_t *w, int n, void *(*fn)(void *))
{
    pthread_t *t = calloc(n, sizeof *t);
    for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, fn, &w[i]);
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
    free(t);
}

/* wait until w->done >= w->todo, or no progress for `idle_ms` */
static void wait_done(worker_t *w, int idle_ms)
{
    pthread_mutex_lock(&w->mu);
    long last = -1;
    while (w->done < w->todo) {
        if (w->done == last) {
            fprintf(stderr, "loadgen: worker %d stalled at %ld/%ld\n", w->idx, w->done, w->todo);
            atomic_fetch_add(&errors, w->todo - w->done);
            break;
        }
        last = w->done;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += idle_ms / 1000;
        ts.tv_nsec += (idle_ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
        while (w->done < w->todo && w->done == last)
            if (pthread_cond_timedwait(&w->cv, &w->mu, &ts) != 0) break;
    }
    pthread_mutex_unlock(&w->mu);
}

static void worker_progress(worker_t *w, long add)
{
    pthread_mutex_lock(&w->mu);
    w->done += add;
    if (w->done >= w->todo) {
        note_end();
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
}

/* ------------------------------------------------------------------ publishers */

static char subject_buf[64];

static void *core_pub(void *arg)
{
    worker_t *w = arg;
    char *p = payload_new();
    for (long i = 0; i < w->todo; i++) {
        natsStatus s;
        if (headers) {
            natsMsg *m = msg_new(subject_buf, NULL, p);
            s = natsConnection_PublishMsg(w->nc, m);
            natsMsg_Destroy(m);
        } else {
            stamp(p);
            s = natsConnection_Publish(w->nc, subject_buf, p, size);
        }
        if (s != NATS_OK) atomic_fetch_add(&errors, 1);
    }
    CHECK("flush", natsConnection_FlushTimeout(w->nc, 60000));
    note_end();
    free(p);
    return NULL;
}

static void on_core_msg(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
    worker_t *w = closure;
    if (natsMsg_GetDataLength(msg) >= 8) worker_lat(w, since_stamp(natsMsg_GetData(msg)));
    natsMsg_Destroy(msg);
    worker_progress(w, 1);
}

static void on_request(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
    if (natsConnection_Publish(nc, natsMsg_GetReply(msg), natsMsg_GetData(msg),
                               natsMsg_GetDataLength(msg)) != NATS_OK)
        atomic_fetch_add(&errors, 1);
    natsMsg_Destroy(msg);
}

static void *requester(void *arg)
{
    worker_t *w = arg;
    char *p = payload_new();
    for (long i = 0; i < w->todo; i++) {
        natsMsg *reply = NULL;
        natsStatus s;
        int64_t t0 = now_ns();
        if (headers) {
            natsMsg *m = msg_new(subject_buf, NULL, p);
            s = natsConnection_RequestMsg(&reply, w->nc, m, 10000);
            natsMsg_Destroy(m);
        } else {
            s = natsConnection_Request(&reply, w->nc, subject_buf, p, size, 10000);
        }
        if (s != NATS_OK) atomic_fetch_add(&errors, 1);
        else worker_lat(w, now_ns() - t0);
        natsMsg_Destroy(reply);
    }
    note_end();
    free(p);
    return NULL;
}

static void *js_pub_sync(void *arg)
{
    worker_t *w = arg;
    char *p = payload_new();
    char subj[64];
    for (long i = 0; i < w->todo; i++) {
        jsPubAck *pa = NULL;
        jsErrCode ec = 0;
        natsMsg *m = msg_new(next_subject(subj, sizeof subj), NULL, p);
        int64_t t0 = now_ns();
        natsStatus s = js_PublishMsg(&pa, w->js, m, NULL, &ec);
        if (s != NATS_OK) atomic_fetch_add(&errors, 1);
        else worker_lat(w, now_ns() - t0);
        jsPubAck_Destroy(pa);
        natsMsg_Destroy(m);
    }
    note_end();
    free(p);
    return NULL;
}

static void on_pub_ack(jsCtx *js, natsMsg *msg, jsPubAck *pa, jsPubAckErr *pae, void *closure)
{
    worker_t *w = closure;
    if (pa == NULL) atomic_fetch_add(&errors, 1);
    else if (natsMsg_GetDataLength(msg) >= 8) worker_lat(w, since_stamp(natsMsg_GetData(msg)));
    natsMsg_Destroy(msg);
}

static void *js_pub_async(void *arg)
{
    worker_t *w = arg;
    char *p = payload_new();
    char subj[64];
    for (long i = 0; i < w->todo; i++) {
        natsMsg *m = msg_new(next_subject(subj, sizeof subj), NULL, p);
        natsStatus s = js_PublishMsgAsync(w->js, &m, NULL);
        if (s != NATS_OK) {
            atomic_fetch_add(&errors, 1);
            natsMsg_Destroy(m);
        }
    }
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = 60000;
    CHECK("publish async complete", js_PublishAsyncComplete(w->js, &po));
    note_end();
    free(p);
    return NULL;
}

static jsCtx *async_js(worker_t *w)
{
    jsOptions o;
    jsOptions_Init(&o);
    o.PublishAsync.MaxPending = window;
    o.PublishAsync.AckHandler = on_pub_ack;
    o.PublishAsync.AckHandlerClosure = w;
    o.PublishAsync.StallWait = 60000;
    o.Wait = 30000;
    return jetstream(w->nc, &o);
}

/* fill the stream with `n` messages (not measured) */
static void prefill(long n)
{
    if (n <= 0) return;
    worker_t *w = workers_new(1);
    w->nc = connect_one(0);
    w->js = async_js(w);
    w->todo = n;
    js_pub_async(w);
    if (stream_msgs(w->js) != expected_stored(n)) die("prefill", NATS_ERR);
    atomic_store(&errors, 0);
    atomic_store(&t_end, 0);
    jsCtx_Destroy(w->js);
    natsConnection_Destroy(w->nc);
    free(w->lat);
    free(w);
    lats.n = 0;
}

/* -C idle durable consumers on the stream (pull or push, filtered or not) */
static void idle_consumers(jsCtx *js)
{
    char durable[64], filter[64], deliver[64];
    for (int i = 0; i < nconsumers; i++) {
        jsConsumerConfig cc;
        jsConsumerInfo *ci = NULL;
        jsErrCode ec = 0;
        jsConsumerConfig_Init(&cc);
        snprintf(durable, sizeof durable, "idle%d", i);
        cc.Durable = durable;
        cc.AckPolicy = js_AckExplicit;
        if (consumer_filtered) {
            snprintf(filter, sizeof filter, SUBJECT_PREFIX ".none.%d", i);
            cc.FilterSubject = filter;
        }
        if (consumer_push) {
            snprintf(deliver, sizeof deliver, "_loadgen.idle.%d", i);
            cc.DeliverSubject = deliver;
        }
        CHECK("add idle consumer", js_AddConsumer(&ci, js, STREAM, &cc, NULL, &ec));
        jsConsumerInfo_Destroy(ci);
    }
}

/* -X idle connections, each subscribed to its own subject */
static natsConnection **idle_conns;
static natsSubscription **idle_subs;

static void idle_connections(void)
{
    char subj[64];
    idle_conns = calloc(nidle ? nidle : 1, sizeof *idle_conns);
    idle_subs = calloc(nidle ? nidle : 1, sizeof *idle_subs);
    for (int i = 0; i < nidle; i++) {
        idle_conns[i] = connect_one(0);
        snprintf(subj, sizeof subj, SUBJECT_PREFIX ".idle.%d", i);
        CHECK("idle subscribe", natsConnection_SubscribeSync(&idle_subs[i], idle_conns[i], subj));
    }
    for (int i = 0; i < nidle; i++) CHECK("idle flush", natsConnection_Flush(idle_conns[i]));
}

/* write kv_keys keys k0.<i> with async JetStream publishes (not measured) */
static void kv_prefill(void)
{
    worker_t *w = workers_new(1);
    char *p = payload_new();
    char subj[64];
    w->nc = connect_one(0);
    w->js = async_js(w);
    for (long i = 0; i < kv_keys; i++) {
        natsMsg *m;
        snprintf(subj, sizeof subj, "$KV." BUCKET ".k0.%ld", i);
        CHECK("msg", natsMsg_Create(&m, subj, NULL, p, size));
        if (js_PublishMsgAsync(w->js, &m, NULL) != NATS_OK) die("kv prefill", NATS_ERR);
    }
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = 120000;
    CHECK("kv prefill complete", js_PublishAsyncComplete(w->js, &po));
    if (atomic_load(&errors)) die("kv prefill", NATS_ERR);
    jsCtx_Destroy(w->js);
    natsConnection_Destroy(w->nc);
    free(w->lat);
    free(w);
    free(p);
    lats.n = 0;
    atomic_store(&t_end, 0);
}

/* ------------------------------------------------------------------ consumers */

static void *puller(void *arg)
{
    worker_t *w = arg;
    while (atomic_load(&consumed) < count) {
        natsMsgList list = {0};
        jsErrCode ec = 0;
        long left = count - atomic_load(&consumed);
        int batch = left < window ? (int) left : window;
        if (batch < 1) batch = 1;
        natsStatus s = natsSubscription_Fetch(&list, w->sub, batch, 500, &ec);
        if (s == NATS_TIMEOUT) continue;
        if (s != NATS_OK) {
            fprintf(stderr, "loadgen: fetch: %s\n", natsStatus_GetText(s));
            atomic_fetch_add(&errors, 1);
            break;
        }
        for (int i = 0; i < list.Count; i++)
            if (natsMsg_Ack(list.Msgs[i], NULL) != NATS_OK) atomic_fetch_add(&errors, 1);
        int got = list.Count;
        w->done += got;
        natsMsgList_Destroy(&list);
        if (atomic_fetch_add(&consumed, got) + got >= count) {
            natsConnection_FlushTimeout(w->nc, 60000);
            note_end();
        }
    }
    CHECK("flush", natsConnection_FlushTimeout(w->nc, 60000));
    return NULL;
}

static void on_push(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
    worker_t *w = closure;
    if (natsMsg_Ack(msg, NULL) != NATS_OK) atomic_fetch_add(&errors, 1);
    natsMsg_Destroy(msg);
    if (atomic_fetch_add(&consumed, 1) + 1 >= count) {
        natsConnection_FlushTimeout(nc, 60000);
        note_end();
    }
    worker_progress(w, 1);
}

/* ------------------------------------------------------------------ KV */

static void *kv_putter(void *arg)
{
    worker_t *w = arg;
    char *p = payload_new();
    char key[32];
    for (long i = 0; i < w->todo; i++) {
        uint64_t rev = 0;
        snprintf(key, sizeof key, "k0.%ld", (i * npubs + w->idx) % kv_keys);
        stamp(p);
        int64_t t0 = now_ns();
        natsStatus s = kvStore_Put(&rev, w->kv, key, p, size);
        if (s != NATS_OK) atomic_fetch_add(&errors, 1);
        else worker_lat(w, now_ns() - t0);
    }
    note_end();
    free(p);
    return NULL;
}

static void *kv_getter(void *arg)
{
    worker_t *w = arg;
    char key[32];
    for (long i = 0; i < w->todo; i++) {
        kvEntry *e = NULL;
        snprintf(key, sizeof key, "k0.%ld", (i * 7 + w->idx) % kv_keys);
        int64_t t0 = now_ns();
        natsStatus s = kvStore_Get(&e, w->kv, key);
        if (s != NATS_OK || kvEntry_ValueLen(e) != size) atomic_fetch_add(&errors, 1);
        else worker_lat(w, now_ns() - t0);
        kvEntry_Destroy(e);
    }
    note_end();
    return NULL;
}

/* a watcher over the whole bucket: all initial values, up to the end-of-initial marker */
static void *kv_watcher(void *arg)
{
    worker_t *w = arg;
    kvWatcher *kw = NULL;
    long got = 0;
    CHECK("watch", kvStore_WatchAll(&kw, w->kv, NULL));
    for (;;) {
        kvEntry *e = NULL;
        natsStatus s = kvWatcher_Next(&e, kw, 30000);
        if (s != NATS_OK) { atomic_fetch_add(&errors, 1); break; }
        if (e == NULL) break;
        got++;
        kvEntry_Destroy(e);
    }
    note_end();
    if (got != kv_keys) {
        fprintf(stderr, "loadgen: watch got %ld of %ld keys\n", got, kv_keys);
        atomic_fetch_add(&errors, 1);
    }
    kvWatcher_Destroy(kw);
    return NULL;
}

static void *kv_lister(void *arg)
{
    worker_t *w = arg;
    kvKeysList list = {0};
    natsStatus s = kvStore_Keys(&list, w->kv, NULL);
    note_end();
    if (s != NATS_OK || list.Count != kv_keys) {
        fprintf(stderr, "loadgen: keys: %s, %d of %ld\n", natsStatus_GetText(s), list.Count,
                kv_keys);
        atomic_fetch_add(&errors, 1);
    }
    kvKeysList_Destroy(&list);
    return NULL;
}

/* ------------------------------------------------------------------ main */

static void usage(void)
{
    fprintf(stderr,
            "usage: loadgen -s URL -m MODE [-n COUNT] [-z SIZE] [-p PUBS] [-c SUBS] [-w WINDOW]\n"
            "               [-S memory|file] [-H] [-k] [-i] [-A]\n"
            "               [-B STORED] [-J SUBJECTS] [-L PER_SUBJECT] [-C CONSUMERS [-P pull|push]"
            " [-F]]\n"
            "               [-X IDLE_CONNS] [-N KV_KEYS]\n"
            "modes: pub pubsub reqrep js-pub-sync js-pub-async js-pull js-push kv-put kv-get\n"
            "       kv-watch kv-keys\n");
    exit(2);
}

static void go(void)
{
    if (handshake) {
        char line[64];
        printf("ready\n");
        fflush(stdout);
        if (!fgets(line, sizeof line, stdin)) exit(1);
    }
    t_start = now_ns();
}

static void collect(worker_t *w, int n)
{
    for (int i = 0; i < n; i++) lat_add_many(w[i].lat, w[i].nlat);
}

int main(int argc, char **argv)
{
    int opt;
    while ((opt = getopt(argc, argv, "s:m:n:z:p:c:w:S:HkiAhB:J:L:C:P:FX:N:")) != -1) {
        switch (opt) {
        case 's': url = optarg; break;
        case 'm': mode = optarg; break;
        case 'n': count = atol(optarg); break;
        case 'z': size = atoi(optarg); break;
        case 'p': npubs = atoi(optarg); break;
        case 'c': nsubs = atoi(optarg); break;
        case 'w': window = atoi(optarg); break;
        case 'S':
            storage_name = optarg;
            if (!strcmp(optarg, "memory")) storage = js_MemoryStorage;
            else if (!strcmp(optarg, "file")) storage = js_FileStorage;
            else usage();
            break;
        case 'H': headers = 1; break;
        case 'k': keep = 1; break;
        case 'i': handshake = 1; break;
        case 'A': asap_consumers = 1; break;
        case 'B': base = atol(optarg); break;
        case 'J': nsubjects = atol(optarg); break;
        case 'L': per_subject = atol(optarg); break;
        case 'C': nconsumers = atoi(optarg); break;
        case 'P':
            if (!strcmp(optarg, "push")) consumer_push = 1;
            else if (!strcmp(optarg, "pull")) consumer_push = 0;
            else usage();
            break;
        case 'F': consumer_filtered = 1; break;
        case 'X': nidle = atoi(optarg); break;
        case 'N': kv_keys = atol(optarg); break;
        default: usage();
        }
    }
    if (size < 16 || count < 1 || npubs < 1 || nsubs < 1 || window < 1 || base < 0
        || nsubjects < 1 || per_subject < 0 || nconsumers < 0 || nidle < 0 || kv_keys < 1)
        usage();
    if (!strcmp(mode, "kv-watch") || !strcmp(mode, "kv-keys")) count = kv_keys;
    CHECK("init", nats_Open(-1));
    snprintf(subject_buf, sizeof subject_buf, SUBJECT_PREFIX ".bench");

    natsConnection *admin = connect_one(1);
    jsCtx *ajs = jetstream(admin, NULL);
    worker_t *pubs = workers_new(npubs), *subs = workers_new(nsubs);
    long expect_stream = -1;
    int uses_stream = 0, uses_kv = 0;
    idle_connections();

    if (!strcmp(mode, "pub")) {
        for (int i = 0; i < npubs; i++) {
            pubs[i].nc = connect_one(0);
            pubs[i].todo = share(i, npubs);
        }
        go();
        run_threads(pubs, npubs, core_pub);
    } else if (!strcmp(mode, "pubsub")) {
        for (int i = 0; i < nsubs; i++) {
            subs[i].nc = connect_one(0);
            subs[i].todo = count;
            CHECK("subscribe", natsConnection_Subscribe(&subs[i].sub, subs[i].nc, subject_buf,
                                                        on_core_msg, &subs[i]));
            CHECK("pending limits", natsSubscription_SetPendingLimits(subs[i].sub, -1, -1));
            CHECK("flush", natsConnection_Flush(subs[i].nc));
        }
        for (int i = 0; i < npubs; i++) {
            pubs[i].nc = connect_one(0);
            pubs[i].todo = share(i, npubs);
        }
        go();
        run_threads(pubs, npubs, core_pub);
        for (int i = 0; i < nsubs; i++) wait_done(&subs[i], 10000);
        collect(subs, nsubs);
    } else if (!strcmp(mode, "reqrep")) {
        for (int i = 0; i < nsubs; i++) {
            subs[i].nc = connect_one(1);
            CHECK("subscribe", natsConnection_QueueSubscribe(&subs[i].sub, subs[i].nc, subject_buf,
                                                             "responders", on_request, &subs[i]));
            CHECK("flush", natsConnection_Flush(subs[i].nc));
        }
        for (int i = 0; i < npubs; i++) {
            pubs[i].nc = connect_one(1);
            pubs[i].todo = share(i, npubs);
        }
        go();
        run_threads(pubs, npubs, requester);
        collect(pubs, npubs);
    } else if (!strcmp(mode, "js-pub-sync") || !strcmp(mode, "js-pub-async")) {
        int async = !strcmp(mode, "js-pub-async");
        uses_stream = 1;
        create_stream(ajs);
        prefill(base);
        idle_consumers(ajs);
        for (int i = 0; i < npubs; i++) {
            pubs[i].nc = connect_one(!async);
            pubs[i].js = async ? async_js(&pubs[i]) : jetstream(pubs[i].nc, NULL);
            pubs[i].todo = share(i, npubs);
        }
        go();
        run_threads(pubs, npubs, async ? js_pub_async : js_pub_sync);
        collect(pubs, npubs);
        expect_stream = (long) expected_stored(base + count);
    } else if (!strcmp(mode, "js-pull") || !strcmp(mode, "js-push")) {
        int pull = !strcmp(mode, "js-pull");
        uses_stream = 1;
        create_stream(ajs);
        prefill(count + base);
        idle_consumers(ajs);
        for (int i = 0; i < nsubs; i++) {
            subs[i].nc = connect_one(asap_consumers);
            subs[i].js = jetstream(subs[i].nc, NULL);
        }
        if (pull) {
            for (int i = 0; i < nsubs; i++) {
                jsErrCode ec = 0;
                CHECK("pull subscribe", js_PullSubscribe(&subs[i].sub, subs[i].js, SUBJECT_PREFIX ".>",
                                                         "puller", NULL, NULL, &ec));
            }
            go();
            run_threads(subs, nsubs, puller);
        } else {
            go();
            for (int i = 0; i < nsubs; i++) {
                jsSubOptions so;
                jsErrCode ec = 0;
                jsSubOptions_Init(&so);
                so.ManualAck = true;
                so.Config.AckPolicy = js_AckExplicit;
                so.Config.MaxAckPending = 10000;
                if (nsubs > 1) so.Queue = "pushers";
                subs[i].todo = nsubs > 1 ? 0 : count;
                CHECK("push subscribe", js_Subscribe(&subs[i].sub, subs[i].js, SUBJECT_PREFIX ".>",
                                                     on_push, &subs[i], NULL, &so, &ec));
                CHECK("pending limits", natsSubscription_SetPendingLimits(subs[i].sub, -1, -1));
            }
            if (nsubs == 1) wait_done(&subs[0], 10000);
            else
                while (atomic_load(&consumed) < count) {
                    long before = atomic_load(&consumed);
                    usleep(2000000);
                    if (atomic_load(&consumed) == before) {
                        atomic_fetch_add(&errors, count - before);
                        break;
                    }
                }
        }
        if (atomic_load(&consumed) < count) atomic_fetch_add(&errors, 1);
    } else if (!strncmp(mode, "kv-", 3)) {
        kvConfig kc;
        kvStore *kv = NULL;
        uses_kv = 1;
        kvConfig_Init(&kc);
        kc.Bucket = BUCKET;
        kc.History = 1;
        kc.StorageType = storage;
        js_DeleteKeyValue(ajs, BUCKET);
        CHECK("create bucket", js_CreateKeyValue(&kv, ajs, &kc));
        kvStore_Destroy(kv);
        kv_prefill();
        for (int i = 0; i < npubs; i++) {
            pubs[i].nc = connect_one(1);
            pubs[i].js = jetstream(pubs[i].nc, NULL);
            CHECK("bind bucket", js_KeyValue(&pubs[i].kv, pubs[i].js, BUCKET));
            pubs[i].todo = share(i, npubs);
        }
        go();
        void *(*fn)(void *) = !strcmp(mode, "kv-put") ? kv_putter
            : !strcmp(mode, "kv-get") ? kv_getter
            : !strcmp(mode, "kv-watch") ? kv_watcher
            : !strcmp(mode, "kv-keys") ? kv_lister : NULL;
        if (fn == NULL) usage();
        if (fn == kv_watcher || fn == kv_lister) npubs = 1;
        run_threads(pubs, npubs, fn);
        collect(pubs, npubs);
    } else {
        usage();
    }

    int64_t end = atomic_load(&t_end);
    if (end < t_start) end = now_ns();
    double seconds = (end - t_start) / 1e9;
    qsort(lats.v, lats.n, sizeof(int64_t), cmp64);
    long stored = -1;
    if (expect_stream >= 0) {
        stored = (long) stream_msgs(ajs);
        if (stored != expect_stream) atomic_fetch_add(&errors, 1);
    }
    printf("{\"mode\": \"%s\", \"storage\": \"%s\", \"size\": %d, \"pubs\": %d, \"subs\": %d, "
           "\"headers\": %s, \"ops\": %ld, \"seconds\": %.6f, \"msgs_per_s\": %.1f, "
           "\"mb_per_s\": %.3f, \"p50_us\": %.1f, \"p99_us\": %.1f, \"latencies\": %ld, "
           "\"stored\": %ld, \"errors\": %ld}\n",
           mode, storage_name, size, npubs, nsubs, headers ? "true" : "false", count, seconds,
           count / seconds, count * (double) size / seconds / 1e6,
           percentile_us(0.50), percentile_us(0.99), lats.n, stored, atomic_load(&errors));
    fflush(stdout);

    if (!keep) {
        jsErrCode ec = 0;
        for (int i = 0; i < nsubs; i++) if (subs[i].sub) natsSubscription_Unsubscribe(subs[i].sub);
        if (uses_stream) js_DeleteStream(ajs, STREAM, NULL, &ec);
        if (uses_kv) js_DeleteKeyValue(ajs, BUCKET);
    }
    for (int i = 0; i < npubs; i++) {
        kvStore_Destroy(pubs[i].kv);
        jsCtx_Destroy(pubs[i].js);
        natsConnection_Destroy(pubs[i].nc);
    }
    for (int i = 0; i < nsubs; i++) {
        natsSubscription_Destroy(subs[i].sub);
        jsCtx_Destroy(subs[i].js);
        natsConnection_Destroy(subs[i].nc);
    }
    for (int i = 0; i < nidle; i++) {
        natsSubscription_Destroy(idle_subs[i]);
        natsConnection_Destroy(idle_conns[i]);
    }
    jsCtx_Destroy(ajs);
    natsConnection_Destroy(admin);
    nats_Close();
    return atomic_load(&errors) ? 3 : 0;
}

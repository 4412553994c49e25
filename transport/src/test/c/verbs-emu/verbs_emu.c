/*
 * nucx verbs emulator: a stand-in for the whole of libibverbs.so.1, for tests on machines without RDMA hardware or
 * kernel support. Built by the transport module's test build (build.sh) and loaded instead of the real library
 * through NUCX_VERBS_LIB, so the Java bindings run exactly the path they run on hardware: the exported control verbs
 * here, the data-path verbs through the function pointers this library puts into a real struct ibv_context.ops.
 *
 * Model: two devices (emu0, emu1), one InfiniBand port each, RC queue pairs only.
 *
 *   process A                                            process B
 *   app thread: ibv_post_send --> SQ --doorbell-->       per-context progress thread ("the NIC")
 *   progress thread: REQ {seq, op, A's SGE addresses} ====unix socket====> validates rkey/length/access,
 *                                                        copies with process_vm_readv/writev between A's memory and
 *                                                        its own (or applies the atomic with the CPU's instruction),
 *                                  <==================== RESP {seq, ACK | RNR NAK | error NAK, atomic original}
 *   completion into A's CQ, event on A's completion channel fd if armed
 *
 * Every QP listens on an abstract unix socket "nucx-verbs-emu.<uid>.<dev>.<qpn>" (so its number is unique on the
 * host for that device and nothing is left behind when a process dies). A QP in RTS dials its destination QP once
 * and sends HELLO; the destination accepts only while it is in RTR or RTS and its dest_qp_num names the dialler,
 * otherwise the dialler retries every (4.096 us << timeout) up to retry_cnt times, then completes with
 * IBV_WC_RETRY_EXC_ERR, as a requester does whose packets nobody answers. Requests of one QP travel on the socket it
 * dialled, the peer's requests on the socket the peer dialled, so both directions are ordered and nothing races.
 *
 * Semantics kept: SEND consumes the oldest posted receive or is answered by an RNR NAK (retried after the
 * responder's min_rnr_timer, rnr_retry times, 7 = forever, go-back-N); RDMA WRITE/READ and 64-bit atomics check the
 * rkey, range and access flags of the responder's memory region (else IBV_WC_REM_ACCESS_ERR for the requester, and
 * the responder's QP goes to the error state with IBV_EVENT_QP_ACCESS_ERR); completions in order; a QP in error
 * flushes everything with IBV_WC_WR_FLUSH_ERR; a peer that goes away (socket closed: the process died or destroyed
 * its QP) fails the oldest outstanding send with IBV_WC_RETRY_EXC_ERR and the QP goes to the error state; an idle QP
 * notices only when it next sends, as on hardware. Completion channel and async event fds are pipes that become
 * readable when an armed CQ gets a completion or an async event is raised. IBV_EVENT_COMM_EST is raised when the
 * first request reaches a QP in RTR.
 *
 * Shared receive queues are kept (RC QPs attached to one take their receives from it; its limit event is not
 * raised). Address handles can be made (UD is not carried, so they are never used).
 *
 * Not modelled: UD/UC/XRC, memory windows, multicast, RDMA WRITE with immediate, a responder whose process is
 * stopped (its "NIC" stops with it).
 *
 * Settings (environment): VERBS_EMU_DEVICES (0..2, default 2), VERBS_EMU_PORT_STATE (active | down),
 * VERBS_EMU_LINK_LAYER (infiniband | ethernet: RoCE ports, no LIDs, GRH required, GIDs 0 = RoCE v1 and 1 = RoCE v2),
 * VERBS_EMU_WIDTHS (link width per device, comma-separated, of 1x 2x 4x 8x 12x; default 4x: the ports report it, and
 * the data rate nucx and UCX compute from it sets how a multi-rail transfer is split; the emulator moves bytes as fast
 * as it can whatever it says), VERBS_EMU_DEBUG (trace dials and errors on stderr).
 */
#define _GNU_SOURCE
#include <infiniband/verbs.h>

/* verbs.h turns these names into macros over inline helpers; this library defines the exported functions */
#undef ibv_reg_mr
#undef ibv_reg_mr_iova
#undef ibv_query_port

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

#define EMU_MAX_DEVICES   2
#define EMU_MAX_SGE       16
#define EMU_MAX_INLINE    512
#define EMU_MAX_QP_WR     16384
#define EMU_MAX_CQE       (1 << 20)
#define EMU_MAX_MSG       (1u << 30)
#define EMU_MAX_RD_ATOM   16
#define EMU_MAGIC         0x4e564d55u /* "NVMU" */
#define EMU_VERSION       1

/* ------------------------------------------------------------------------------------------------ counters */

/* Read by tests through verbs_emu_counters(): what the emulated NICs of this process did. */
enum {
    C_REQ_SENT, C_REQ_RECEIVED, C_RNR_NAK_SENT, C_RNR_NAK_RECEIVED, C_BYTES_SENT, C_BYTES_RECEIVED,
    C_DEV0_BYTES, C_DEV1_BYTES, C_ERR_NAK_SENT, C_RETRY_EXC, C_COUNT
};
static uint64_t counters[C_COUNT];

static void count(int which, uint64_t n)
{
    __atomic_fetch_add(&counters[which], n, __ATOMIC_RELAXED);
}

EXPORT int verbs_emu_counters(uint64_t *out, int n)
{
    int i;
    for (i = 0; i < n && i < C_COUNT; i++) {
        out[i] = __atomic_load_n(&counters[i], __ATOMIC_RELAXED);
    }
    return C_COUNT;
}

/* ------------------------------------------------------------------------------------------------ devices */

struct emu_device {
    struct ibv_device dev;
    int index;
};

static struct emu_device devices[EMU_MAX_DEVICES];
static pthread_once_t devices_once = PTHREAD_ONCE_INIT;

static int env_int(const char *name, int dflt)
{
    const char *v = getenv(name);
    return v != NULL && *v != '\0' ? atoi(v) : dflt;
}

static int device_count(void)
{
    int n = env_int("VERBS_EMU_DEVICES", EMU_MAX_DEVICES);
    return n < 0 ? 0 : n > EMU_MAX_DEVICES ? EMU_MAX_DEVICES : n;
}

static void init_devices(void)
{
    int i;
    for (i = 0; i < EMU_MAX_DEVICES; i++) {
        struct ibv_device *d = &devices[i].dev;
        devices[i].index = i;
        d->node_type = IBV_NODE_CA;
        d->transport_type = IBV_TRANSPORT_IB;
        snprintf(d->name, sizeof(d->name), "emu%d", i);
        snprintf(d->dev_name, sizeof(d->dev_name), "uverbs%d", i);
        snprintf(d->dev_path, sizeof(d->dev_path), "/sys/class/infiniband_verbs/uverbs%d", i);
        snprintf(d->ibdev_path, sizeof(d->ibdev_path), "/sys/class/infiniband/emu%d", i);
    }
}

static uint16_t lid_of(int dev)
{
    return (uint16_t)(dev + 1);
}

static void gid_of(int dev, union ibv_gid *gid);

/* IB width code (1 = 1x, 16 = 2x, 2 = 4x, 4 = 8x, 8 = 12x) of device dev from VERBS_EMU_WIDTHS; 4x when unset. */
static uint8_t width_of(int dev)
{
    const char *v = getenv("VERBS_EMU_WIDTHS");
    int i = 0;
    while (v != NULL && *v != '\0') {
        int lanes = atoi(v);
        if (i == dev) {
            switch (lanes) {
            case 1: return 1;
            case 2: return 16;
            case 8: return 4;
            case 12: return 8;
            default: return 2;
            }
        }
        v = strchr(v, ',');
        if (v != NULL) {
            v++;
        }
        i++;
    }
    return 2;
}

/* VERBS_EMU_LINK_LAYER=ethernet: the ports are RoCE: no LID, GRH required, GID 0 RoCE v1 (link-local) and GID 1
   RoCE v2 (IPv4-mapped 10.0.0.<dev+1>), as a RoCE NIC's table starts. */
static int roce(void)
{
    const char *v = getenv("VERBS_EMU_LINK_LAYER");
    return v != NULL && strcmp(v, "ethernet") == 0;
}

static int gid_count(void)
{
    return roce() ? 2 : 1;
}

/* GID `index` of device `dev`; 0 for a valid index */
static int gid_at(int dev, int index, union ibv_gid *gid)
{
    if (index < 0 || index >= gid_count()) {
        return EINVAL;
    }
    memset(gid, 0, sizeof(*gid));
    if (index == 1) {
        gid->raw[10] = 0xff;
        gid->raw[11] = 0xff;
        gid->raw[12] = 10;
        gid->raw[15] = (uint8_t)(dev + 1);
        return 0;
    }
    gid_of(dev, gid);
    return 0;
}

static void gid_of(int dev, union ibv_gid *gid)
{
    memset(gid, 0, sizeof(*gid));
    gid->raw[0] = 0xfe;
    gid->raw[1] = 0x80;
    /* interface id: "nucx emu" marker + device index */
    gid->raw[8] = 0x02;
    gid->raw[9] = 0x6e;
    gid->raw[10] = 0x75;
    gid->raw[11] = 0x63;
    gid->raw[12] = 0x78;
    gid->raw[15] = (uint8_t)dev;
}

static uint64_t guid_of(int dev)
{
    return 0x026e756378000000ull | (uint64_t)dev;
}

EXPORT struct ibv_device **ibv_get_device_list(int *num_devices)
{
    int n, i;
    struct ibv_device **list;
    pthread_once(&devices_once, init_devices);
    n = device_count();
    list = calloc((size_t)n + 1, sizeof(*list));
    if (list == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    for (i = 0; i < n; i++) {
        list[i] = &devices[i].dev;
    }
    if (num_devices != NULL) {
        *num_devices = n;
    }
    return list;
}

EXPORT void ibv_free_device_list(struct ibv_device **list)
{
    free(list);
}

EXPORT const char *ibv_get_device_name(struct ibv_device *device)
{
    return device->name;
}

EXPORT __be64 ibv_get_device_guid(struct ibv_device *device)
{
    return __builtin_bswap64(guid_of(((struct emu_device *)device)->index));
}

EXPORT int ibv_get_device_index(struct ibv_device *device)
{
    return ((struct emu_device *)device)->index;
}

EXPORT int ibv_fork_init(void)
{
    return 0;
}

EXPORT enum ibv_fork_status ibv_is_fork_initialized(void)
{
    return IBV_FORK_DISABLED;
}

/* ------------------------------------------------------------------------------------------------ objects */

struct emu_ctx;
struct emu_qp;

struct emu_cq {
    struct ibv_cq cq;
    struct emu_ctx *ctx;
    pthread_mutex_t mu;
    struct ibv_wc *ring;
    int cap, head, count;
    int armed;
};

struct emu_channel {
    struct ibv_comp_channel ch;
    int wfd;
};

struct emu_mr {
    struct ibv_mr mr;
    int access;
};

/* A buffered non-blocking socket. */
struct conn {
    int fd;
    int kind; /* K_* */
    struct emu_qp *qp;
    unsigned char *in;
    size_t in_len, in_cap;
    unsigned char *out;
    size_t out_off, out_len, out_cap;
    int want_out;
    struct conn *next_pending; /* K_PENDING: accepted, waiting for its HELLO */
};

enum { K_DOORBELL = 1, K_LISTEN, K_OUT, K_IN, K_PENDING };

struct wqe {
    uint64_t wr_id;
    int opcode;
    int flags;
    uint32_t imm;
    uint64_t remote_addr;
    uint32_t rkey;
    uint64_t compare_add, swap;
    int num_sge;
    struct ibv_sge sge[EMU_MAX_SGE];
    uint32_t length;
    int bad; /* an SGE names memory its lkey does not grant: a local protection error when it is reached */
    uint32_t inline_len;
    unsigned char inline_data[EMU_MAX_INLINE];
};

struct rwqe {
    uint64_t wr_id;
    int num_sge;
    struct ibv_sge sge[EMU_MAX_SGE];
};

/* A shared receive queue: receives any QP attached to it consumes, oldest first. */
struct emu_srq {
    struct ibv_srq srq;
    pthread_mutex_t mu;
    struct rwqe *rq;
    uint32_t depth, head, tail, max_sge;
};

struct emu_qp {
    struct ibv_qp qp;
    struct emu_srq *srq;
    struct emu_ctx *ctx;
    struct emu_qp *next_in_ctx;
    pthread_mutex_t mu; /* the rings and the state; the progress thread and posting threads share them */
    struct ibv_qp_cap cap;
    int sq_sig_all;
    /* send ring: [sq_head, sq_sent) in flight, [sq_sent, sq_tail) waiting; indexes grow, slot = i % depth */
    struct wqe *sq;
    uint32_t sq_depth, sq_head, sq_sent, sq_tail;
    struct rwqe *rq;
    uint32_t rq_depth, rq_head, rq_tail;
    /* attributes */
    enum ibv_qp_state state;
    uint8_t port, timeout, retry_cnt, rnr_retry, min_rnr_timer, max_rd_atomic, max_dest_rd_atomic;
    int access;
    enum ibv_mtu mtu;
    uint32_t dest_qpn, rq_psn, sq_psn;
    int dest_dev;
    struct ibv_ah_attr ah;
    /* link */
    struct conn listen, out, in;
    int out_up;          /* HELLO accepted */
    int link_dead;       /* a connection closed after it was up: the peer is gone */
    int retries_left, rnr_left;
    uint64_t retry_at_ns; /* 0: no timer */
    uint64_t seq_next;   /* requester: sequence number of sq_sent */
    uint64_t resp_expected; /* responder: next request sequence accepted */
    int peer_pid;
    int comm_est;
};

struct emu_ctx {
    struct verbs_context vctx; /* ibv_context is its last member: ctx pointers point into it */
    int index;
    pthread_mutex_t lock; /* QP list, links; held by the progress thread while it works */
    int epfd;
    struct conn doorbell;
    int async_wfd;
    pthread_t thread;
    int stop;
    struct emu_qp *qps;
    struct conn *pending;
    uint64_t generation; /* bumped when a QP is destroyed: events gathered before refer to freed memory */
};

static struct emu_ctx *ctx_of(struct ibv_context *c)
{
    return (struct emu_ctx *)((char *)c - offsetof(struct emu_ctx, vctx.context));
}

static int debug_on = -1;

static void debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void debug(const char *fmt, ...)
{
    va_list ap;
    if (debug_on < 0) {
        debug_on = getenv("VERBS_EMU_DEBUG") != NULL;
    }
    if (!debug_on) {
        return;
    }
    va_start(ap, fmt);
    fprintf(stderr, "verbs-emu[%d]: ", (int)getpid());
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void raise_async(struct emu_ctx *ctx, void *element, enum ibv_event_type type)
{
    struct { void *element; int type; int pad; } rec = { element, (int)type, 0 };
    if (write(ctx->async_wfd, &rec, sizeof(rec)) != (ssize_t)sizeof(rec)) {
        /* the pipe is full: the application stopped reading events; nothing more to do */
    }
}

/* ------------------------------------------------------------------------------------------------ memory regions */

/* lkey = rkey = slot << 8 | generation, per process; a deregistered key never matches again until 256 reuses. */
#define MR_SLOTS 65536
static struct emu_mr *mr_table[MR_SLOTS];
static uint8_t mr_gen[MR_SLOTS];
static pthread_rwlock_t mr_lock = PTHREAD_RWLOCK_INITIALIZER;

/* The region a key names if [addr, addr+len) lies inside it and it grants `need`; NULL otherwise. */
static struct emu_mr *mr_check(uint32_t key, uint64_t addr, uint64_t len, int need, struct ibv_pd *pd)
{
    struct emu_mr *mr;
    uint32_t slot = key >> 8;
    if (slot >= MR_SLOTS) {
        return NULL;
    }
    pthread_rwlock_rdlock(&mr_lock);
    mr = mr_table[slot];
    if (mr != NULL && (mr->mr.lkey != key || (mr->access & need) != need
            || addr < (uint64_t)(uintptr_t)mr->mr.addr
            || addr + len > (uint64_t)(uintptr_t)mr->mr.addr + mr->mr.length || addr + len < addr
            || (pd != NULL && mr->mr.pd != pd))) {
        mr = NULL;
    }
    pthread_rwlock_unlock(&mr_lock);
    return mr;
}

static struct ibv_mr *reg_mr(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova, unsigned int access)
{
    struct emu_mr *mr;
    uint32_t slot;
    if (iova != (uint64_t)(uintptr_t)addr) {
        errno = EOPNOTSUPP; /* keys address virtual memory here */
        return NULL;
    }
    if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) && !(access & IBV_ACCESS_LOCAL_WRITE)) {
        errno = EINVAL; /* as the specification requires */
        return NULL;
    }
    if (length == 0 && addr == NULL) {
        errno = EINVAL;
        return NULL;
    }
    mr = calloc(1, sizeof(*mr));
    if (mr == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    pthread_rwlock_wrlock(&mr_lock);
    for (slot = 1; slot < MR_SLOTS && mr_table[slot] != NULL; slot++) {
    }
    if (slot == MR_SLOTS) {
        pthread_rwlock_unlock(&mr_lock);
        free(mr);
        errno = ENOMEM;
        return NULL;
    }
    mr->mr.context = pd->context;
    mr->mr.pd = pd;
    mr->mr.addr = addr;
    mr->mr.length = length;
    mr->mr.handle = slot;
    mr->mr.lkey = mr->mr.rkey = slot << 8 | mr_gen[slot];
    mr->access = (int)access;
    mr_table[slot] = mr;
    pthread_rwlock_unlock(&mr_lock);
    return &mr->mr;
}

/* Built with VERBS_EMU_NO_IOVA2 the library is what rdma-core before 28 exported: no ibv_reg_mr_iova2 (the tests
   check nucx's fallback to ibv_reg_mr with it). */
#ifndef VERBS_EMU_NO_IOVA2
EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
                                       unsigned int access)
{
    return reg_mr(pd, addr, length, iova, access);
}
#endif

EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
    return reg_mr(pd, addr, length, (uint64_t)(uintptr_t)addr, (unsigned int)access);
}

EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova, int access)
{
    return reg_mr(pd, addr, length, iova, (unsigned int)access);
}

EXPORT int ibv_dereg_mr(struct ibv_mr *ibmr)
{
    struct emu_mr *mr = (struct emu_mr *)ibmr;
    uint32_t slot = ibmr->handle;
    pthread_rwlock_wrlock(&mr_lock);
    if (slot >= MR_SLOTS || mr_table[slot] != mr) {
        pthread_rwlock_unlock(&mr_lock);
        return EINVAL;
    }
    mr_table[slot] = NULL;
    mr_gen[slot]++;
    pthread_rwlock_unlock(&mr_lock);
    free(mr);
    return 0;
}

/* ------------------------------------------------------------------------------------------------ PD */

EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
    static uint32_t next_handle = 1;
    struct ibv_pd *pd = calloc(1, sizeof(*pd));
    if (pd == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    pd->context = context;
    pd->handle = __atomic_fetch_add(&next_handle, 1, __ATOMIC_RELAXED);
    return pd;
}

EXPORT int ibv_dealloc_pd(struct ibv_pd *pd)
{
    free(pd);
    return 0;
}

/* ------------------------------------------------------------------------------------------------ CQ */

EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
    int fds[2];
    struct emu_channel *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    if (pipe2(fds, O_CLOEXEC) != 0) {
        int e = errno;
        free(c);
        errno = e;
        return NULL;
    }
    c->ch.context = context;
    c->ch.fd = fds[0];
    c->ch.refcnt = 0;
    c->wfd = fds[1];
    return &c->ch;
}

EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
    struct emu_channel *c = (struct emu_channel *)channel;
    if (channel->refcnt != 0) {
        return EBUSY;
    }
    close(c->ch.fd);
    close(c->wfd);
    free(c);
    return 0;
}

EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
                                    struct ibv_comp_channel *channel, int comp_vector)
{
    struct emu_cq *cq;
    (void)comp_vector;
    if (cqe < 1 || cqe > EMU_MAX_CQE) {
        errno = EINVAL;
        return NULL;
    }
    cq = calloc(1, sizeof(*cq));
    if (cq == NULL || (cq->ring = calloc((size_t)cqe, sizeof(struct ibv_wc))) == NULL) {
        free(cq);
        errno = ENOMEM;
        return NULL;
    }
    cq->cq.context = context;
    cq->cq.channel = channel;
    cq->cq.cq_context = cq_context;
    cq->cq.cqe = cqe;
    pthread_mutex_init(&cq->cq.mutex, NULL);
    pthread_cond_init(&cq->cq.cond, NULL);
    pthread_mutex_init(&cq->mu, NULL);
    cq->cap = cqe;
    cq->ctx = ctx_of(context);
    if (channel != NULL) {
        __atomic_fetch_add(&channel->refcnt, 1, __ATOMIC_RELAXED);
    }
    return &cq->cq;
}

EXPORT int ibv_destroy_cq(struct ibv_cq *ibcq)
{
    struct emu_cq *cq = (struct emu_cq *)ibcq;
    if (ibcq->channel != NULL) {
        __atomic_fetch_sub(&ibcq->channel->refcnt, 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_destroy(&cq->mu);
    free(cq->ring);
    free(cq);
    return 0;
}

EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
    struct emu_cq *c;
    ssize_t n = read(channel->fd, &c, sizeof(c));
    if (n != (ssize_t)sizeof(c)) {
        if (n >= 0) {
            errno = EIO;
        }
        return -1;
    }
    *cq = &c->cq;
    *cq_context = c->cq.cq_context;
    return 0;
}

EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
    pthread_mutex_lock(&cq->mutex);
    cq->comp_events_completed += nevents;
    pthread_mutex_unlock(&cq->mutex);
}

/* Adds a completion; an armed CQ then writes one event on its channel. */
static void cq_push(struct emu_cq *cq, const struct ibv_wc *wc)
{
    int event = 0;
    pthread_mutex_lock(&cq->mu);
    if (cq->count == cq->cap) {
        pthread_mutex_unlock(&cq->mu);
        raise_async(cq->ctx, &cq->cq, IBV_EVENT_CQ_ERR);
        return;
    }
    cq->ring[(cq->head + cq->count) % cq->cap] = *wc;
    cq->count++;
    if (cq->armed && cq->cq.channel != NULL) {
        cq->armed = 0;
        event = 1;
    }
    pthread_mutex_unlock(&cq->mu);
    if (event) {
        struct emu_cq *self = cq;
        if (write(((struct emu_channel *)cq->cq.channel)->wfd, &self, sizeof(self)) != (ssize_t)sizeof(self)) {
            /* channel pipe full: the application does not read its events */
        }
    }
}

static int emu_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
    struct emu_cq *cq = (struct emu_cq *)ibcq;
    int i = 0;
    if (n < 0) {
        return -EINVAL;
    }
    pthread_mutex_lock(&cq->mu);
    while (i < n && cq->count > 0) {
        wc[i++] = cq->ring[cq->head];
        cq->head = (cq->head + 1) % cq->cap;
        cq->count--;
    }
    pthread_mutex_unlock(&cq->mu);
    return i;
}

static int emu_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
    struct emu_cq *cq = (struct emu_cq *)ibcq;
    (void)solicited_only; /* every completion counts as solicited here */
    if (ibcq->channel == NULL) {
        return EINVAL;
    }
    pthread_mutex_lock(&cq->mu);
    cq->armed = 1;
    pthread_mutex_unlock(&cq->mu);
    return 0;
}

/* ------------------------------------------------------------------------------------------------ sockets */

static void conn_reset(struct conn *c, int kind, struct emu_qp *qp)
{
    memset(c, 0, sizeof(*c));
    c->fd = -1;
    c->kind = kind;
    c->qp = qp;
}

static void conn_close(struct emu_ctx *ctx, struct conn *c)
{
    if (c->fd >= 0) {
        epoll_ctl(ctx->epfd, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
    }
    free(c->in);
    free(c->out);
    conn_reset(c, c->kind, c->qp);
}

static int conn_watch(struct emu_ctx *ctx, struct conn *c, int op)
{
    struct epoll_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.events = EPOLLIN | (c->want_out ? EPOLLOUT : 0);
    ev.data.ptr = c;
    return epoll_ctl(ctx->epfd, op, c->fd, &ev);
}

static void abstract_name(struct sockaddr_un *sa, socklen_t *len, int dev, uint32_t qpn)
{
    int n;
    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    n = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1, "nucx-verbs-emu.%u.%d.%u", (unsigned)getuid(), dev,
                 qpn);
    *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

/* Queues bytes on a connection and writes what the socket takes now. Returns -1 when the connection broke. */
static int conn_send(struct emu_ctx *ctx, struct conn *c, const void *data, size_t len)
{
    if (c->fd < 0) {
        return -1;
    }
    if (c->out_len - c->out_off + len > c->out_cap || c->out_off > 0) {
        size_t pending = c->out_len - c->out_off;
        if (pending + len > c->out_cap) {
            size_t cap = c->out_cap ? c->out_cap : 4096;
            unsigned char *b;
            while (cap < pending + len) {
                cap *= 2;
            }
            b = malloc(cap);
            if (b == NULL) {
                return -1;
            }
            memcpy(b, c->out + c->out_off, pending);
            free(c->out);
            c->out = b;
            c->out_cap = cap;
        } else {
            memmove(c->out, c->out + c->out_off, pending);
        }
        c->out_len = pending;
        c->out_off = 0;
    }
    memcpy(c->out + c->out_len, data, len);
    c->out_len += len;
    while (c->out_off < c->out_len) {
        ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                break;
            }
            if (errno == EINTR) {
                continue;
            }
            return -1;
        }
        c->out_off += (size_t)n;
    }
    if (c->out_off == c->out_len) {
        c->out_off = c->out_len = 0;
        if (c->want_out) {
            c->want_out = 0;
            conn_watch(ctx, c, EPOLL_CTL_MOD);
        }
    } else if (!c->want_out) {
        c->want_out = 1;
        conn_watch(ctx, c, EPOLL_CTL_MOD);
    }
    return 0;
}

static int conn_flush(struct emu_ctx *ctx, struct conn *c)
{
    return conn_send(ctx, c, "", 0);
}

/* Waits (bounded) until what is queued on a connection is written: its last words before it closes. */
static void conn_drain(struct conn *c, int timeout_ms)
{
    while (c->fd >= 0 && c->out_off < c->out_len) {
        struct pollfd p = { c->fd, POLLOUT, 0 };
        ssize_t n;
        if (poll(&p, 1, timeout_ms) <= 0) {
            return;
        }
        n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
        if (n <= 0) {
            return;
        }
        c->out_off += (size_t)n;
    }
}

/* Reads what is there; returns -1 on EOF or error. */
static int conn_fill(struct conn *c)
{
    for (;;) {
        ssize_t n;
        if (c->in_cap - c->in_len < 4096) {
            size_t cap = c->in_cap ? c->in_cap * 2 : 8192;
            unsigned char *b = realloc(c->in, cap);
            if (b == NULL) {
                return -1;
            }
            c->in = b;
            c->in_cap = cap;
        }
        n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
        if (n > 0) {
            c->in_len += (size_t)n;
            continue;
        }
        if (n == 0) {
            return -1;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            return 0;
        }
        if (errno != EINTR) {
            return -1;
        }
    }
}

/* ------------------------------------------------------------------------------------------------ wire format */

/* Every message: u32 length of what follows, u8 type, then the body. Little-endian host order (one host). */
enum { M_HELLO = 1, M_HELLO_ACK, M_REQ, M_RESP };

struct m_hello {
    uint32_t magic, version;
    int32_t src_dev;
    uint32_t src_qpn, dst_qpn;
    int32_t pid;
};

struct m_hello_ack {
    int32_t accepted;
};

struct m_req {
    uint64_t seq;
    int32_t opcode;
    uint32_t length;
    uint64_t remote_addr;
    uint32_t rkey;
    uint32_t imm;
    uint64_t compare_add, swap;
    int32_t flags;
    int32_t num_sge;      /* the requester's SGEs follow as {addr u64, length u32, pad u32} */
    uint32_t inline_len;  /* or inline bytes follow */
    uint32_t pad;
};

struct m_sge {
    uint64_t addr;
    uint32_t length, pad;
};

enum { R_ACK = 0, R_RNR_NAK, R_REM_ACCESS, R_REM_INV_REQ, R_REM_OP };

struct m_resp {
    uint64_t seq;
    int32_t syndrome;
    uint32_t rnr_timer;
    uint64_t value;
};

static int send_msg(struct emu_ctx *ctx, struct conn *c, int type, const void *body, size_t len,
                    const void *extra, size_t extra_len)
{
    unsigned char head[5];
    uint32_t total = (uint32_t)(1 + len + extra_len);
    memcpy(head, &total, 4);
    head[4] = (unsigned char)type;
    if (conn_send(ctx, c, head, 5) != 0 || conn_send(ctx, c, body, len) != 0) {
        return -1;
    }
    return extra_len ? conn_send(ctx, c, extra, extra_len) : 0;
}

/* ------------------------------------------------------------------------------------------------ QP engine */

static void wake(struct emu_ctx *ctx)
{
    uint64_t one = 1;
    if (write(ctx->doorbell.fd, &one, sizeof(one)) != (ssize_t)sizeof(one)) {
        /* the counter is saturated: the thread is awake anyway */
    }
}

static enum ibv_wc_opcode wc_opcode(int opcode)
{
    switch (opcode) {
    case IBV_WR_RDMA_WRITE: return IBV_WC_RDMA_WRITE;
    case IBV_WR_RDMA_READ: return IBV_WC_RDMA_READ;
    case IBV_WR_ATOMIC_CMP_AND_SWP: return IBV_WC_COMP_SWAP;
    case IBV_WR_ATOMIC_FETCH_AND_ADD: return IBV_WC_FETCH_ADD;
    default: return IBV_WC_SEND;
    }
}

static void complete_send(struct emu_qp *qp, struct wqe *w, enum ibv_wc_status status)
{
    struct ibv_wc wc;
    if (status == IBV_WC_SUCCESS && !(w->flags & IBV_SEND_SIGNALED) && !qp->sq_sig_all) {
        return;
    }
    memset(&wc, 0, sizeof(wc));
    wc.wr_id = w->wr_id;
    wc.status = status;
    wc.opcode = wc_opcode(w->opcode);
    wc.qp_num = qp->qp.qp_num;
    wc.byte_len = (w->opcode == IBV_WR_RDMA_READ) ? w->length
            : (w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP || w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) ? 8 : 0;
    wc.vendor_err = status == IBV_WC_SUCCESS ? 0 : 0x81;
    cq_push((struct emu_cq *)qp->qp.send_cq, &wc);
}

/* A flushed work request's completion: IBV_WC_WR_FLUSH_ERR, as a QP in the error state reports each. */
static void push_flushed(struct ibv_cq *cq, uint64_t wr_id, enum ibv_wc_opcode opcode, uint32_t qp_num)
{
    struct ibv_wc wc;
    memset(&wc, 0, sizeof(wc));
    wc.wr_id = wr_id;
    wc.status = IBV_WC_WR_FLUSH_ERR;
    wc.opcode = opcode;
    wc.qp_num = qp_num;
    wc.vendor_err = 0xf9;
    cq_push((struct emu_cq *)cq, &wc);
}

static void flush_recv(struct emu_qp *qp)
{
    for (; qp->rq_head != qp->rq_tail; qp->rq_head++) {
        push_flushed(qp->qp.recv_cq, qp->rq[qp->rq_head % qp->rq_depth].wr_id, IBV_WC_RECV, qp->qp.qp_num);
    }
}

static void flush_send(struct emu_qp *qp)
{
    for (; qp->sq_head != qp->sq_tail; qp->sq_head++) {
        struct wqe *w = &qp->sq[qp->sq_head % qp->sq_depth];
        push_flushed(qp->qp.send_cq, w->wr_id, wc_opcode(w->opcode), qp->qp.qp_num);
    }
    qp->sq_sent = qp->sq_head;
}

/*
 * The QP enters the error state (caller holds qp->mu): the oldest outstanding send, if a status is given, completes
 * with it; everything else is flushed; the links close, so the peer notices when it next talks to us.
 */
static void qp_to_error(struct emu_qp *qp, enum ibv_wc_status first_status)
{
    debug("qp 0x%x enters the error state (status %d, outstanding %u)", qp->qp.qp_num, (int)first_status,
          qp->sq_tail - qp->sq_head);
    if (first_status != IBV_WC_SUCCESS && qp->sq_head != qp->sq_tail) {
        complete_send(qp, &qp->sq[qp->sq_head % qp->sq_depth], first_status);
        qp->sq_head++;
    }
    qp->state = IBV_QPS_ERR;
    qp->qp.state = IBV_QPS_ERR;
    qp->retry_at_ns = 0;
    flush_send(qp);
    flush_recv(qp);
    conn_close(qp->ctx, &qp->out);
    conn_close(qp->ctx, &qp->in);
    qp->out_up = 0;
}

static double rnr_timer_ms(int code)
{
    /* IB encoding of the RNR NAK timer (IBA table 45) */
    static const double t[32] = { 655.36, 0.01, 0.02, 0.03, 0.04, 0.06, 0.08, 0.12, 0.16, 0.24, 0.32, 0.48,
                                  0.64, 0.96, 1.28, 1.92, 2.56, 3.84, 5.12, 7.68, 10.24, 15.36, 20.48, 30.72,
                                  40.96, 61.44, 81.92, 122.88, 163.84, 245.76, 327.68, 491.52 };
    return t[code & 31];
}

static uint64_t ack_timeout_ns(struct emu_qp *qp)
{
    /* 4.096 us * 2^timeout, kept between 1 ms and 2 s (0 means infinite on hardware: use the upper bound) */
    uint64_t ns = qp->timeout == 0 ? 2000000000ull : (uint64_t)(4096.0 * (double)(1ull << (qp->timeout & 31)));
    return ns < 1000000ull ? 1000000ull : ns > 2000000000ull ? 2000000000ull : ns;
}

static int dev_of_ah(const struct ibv_ah_attr *ah)
{
    int i, g;
    for (i = 0; i < device_count(); i++) {
        if (ah->is_global) {
            for (g = 0; g < gid_count(); g++) {
                union ibv_gid gid;
                gid_at(i, g, &gid);
                if (memcmp(gid.raw, ah->grh.dgid.raw, 16) == 0) {
                    return i;
                }
            }
        } else if (!roce() && ah->dlid == lid_of(i)) {
            return i;
        }
    }
    return -1;
}

/* Dials the destination QP (caller holds ctx->lock and qp->mu). */
static void qp_dial(struct emu_qp *qp)
{
    struct emu_ctx *ctx = qp->ctx;
    struct sockaddr_un sa;
    socklen_t len;
    struct m_hello h;
    int fd;
    conn_close(ctx, &qp->out);
    qp->out_up = 0;
    if (qp->dest_dev < 0) {
        return;
    }
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return;
    }
    abstract_name(&sa, &len, qp->dest_dev, qp->dest_qpn);
    debug("qp 0x%x dials dev %d qpn 0x%x", qp->qp.qp_num, qp->dest_dev, qp->dest_qpn);
    if (connect(fd, (struct sockaddr *)&sa, len) != 0 && errno != EINPROGRESS && errno != EAGAIN) {
        debug("qp 0x%x dial failed: errno %d", qp->qp.qp_num, errno);
        close(fd);
        return; /* nobody listens under that number (yet): the retry timer tries again */
    }
    qp->out.fd = fd;
    conn_watch(ctx, &qp->out, EPOLL_CTL_ADD);
    h.magic = EMU_MAGIC;
    h.version = EMU_VERSION;
    h.src_dev = ctx->index;
    h.src_qpn = qp->qp.qp_num;
    h.dst_qpn = qp->dest_qpn;
    h.pid = getpid();
    if (send_msg(ctx, &qp->out, M_HELLO, &h, sizeof(h), NULL, 0) != 0) {
        conn_close(ctx, &qp->out);
    }
}

/* Sends the waiting requests of a QP in RTS whose link is up (caller holds ctx->lock and qp->mu). */
static void qp_transmit(struct emu_qp *qp)
{
    struct emu_ctx *ctx = qp->ctx;
    while (qp->sq_sent != qp->sq_tail && qp->out_up && qp->retry_at_ns == 0) {
        struct wqe *w = &qp->sq[qp->sq_sent % qp->sq_depth];
        struct m_req r;
        struct m_sge s[EMU_MAX_SGE];
        int i;
        if (w->bad) {
            if (qp->sq_sent == qp->sq_head) {
                qp_to_error(qp, IBV_WC_LOC_PROT_ERR); /* in order: once everything before it completed */
            }
            return;
        }
        for (i = 0; i < w->num_sge && w->inline_len == 0; i++) {
            s[i].addr = w->sge[i].addr;
            s[i].length = w->sge[i].length;
            s[i].pad = 0;
        }
        memset(&r, 0, sizeof(r));
        r.seq = qp->seq_next;
        r.opcode = w->opcode;
        r.length = w->length;
        r.remote_addr = w->remote_addr;
        r.rkey = w->rkey;
        r.imm = w->imm;
        r.compare_add = w->compare_add;
        r.swap = w->swap;
        r.flags = w->flags;
        r.num_sge = w->inline_len ? 0 : w->num_sge;
        r.inline_len = w->inline_len;
        if (send_msg(ctx, &qp->out, M_REQ, &r, sizeof(r), w->inline_len ? (void *)w->inline_data : (void *)s,
                     w->inline_len ? w->inline_len : sizeof(struct m_sge) * (size_t)r.num_sge) != 0) {
            qp->link_dead = 1;
            qp_to_error(qp, IBV_WC_RETRY_EXC_ERR);
            count(C_RETRY_EXC, 1);
            return;
        }
        count(C_REQ_SENT, 1);
        count(C_BYTES_SENT, w->length);
        count(ctx->index == 0 ? C_DEV0_BYTES : C_DEV1_BYTES, w->length);
        qp->sq_sent++;
        qp->seq_next++;
    }
}

/* Copies `len` bytes between the peer's iovecs and ours. Returns 0 or an errno. */
static int cma(int write_to_peer, int pid, struct iovec *mine, int nmine, struct iovec *theirs, int ntheirs)
{
    size_t want = 0, done = 0;
    int i;
    for (i = 0; i < nmine; i++) {
        want += mine[i].iov_len;
    }
    while (done < want) {
        ssize_t n;
        /* skip what is done on both sides */
        struct iovec lm[EMU_MAX_SGE], lt[EMU_MAX_SGE];
        int a = 0, b = 0;
        size_t skip = done;
        for (i = 0; i < nmine; i++) {
            if (skip >= mine[i].iov_len) {
                skip -= mine[i].iov_len;
                continue;
            }
            lm[a].iov_base = (char *)mine[i].iov_base + skip;
            lm[a].iov_len = mine[i].iov_len - skip;
            a++;
            skip = 0;
        }
        skip = done;
        for (i = 0; i < ntheirs; i++) {
            if (skip >= theirs[i].iov_len) {
                skip -= theirs[i].iov_len;
                continue;
            }
            lt[b].iov_base = (char *)theirs[i].iov_base + skip;
            lt[b].iov_len = theirs[i].iov_len - skip;
            b++;
            skip = 0;
        }
        n = write_to_peer ? process_vm_writev(pid, lm, (unsigned long)a, lt, (unsigned long)b, 0)
                          : process_vm_readv(pid, lm, (unsigned long)a, lt, (unsigned long)b, 0);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return errno;
        }
        if (n == 0) {
            return EFAULT;
        }
        done += (size_t)n;
    }
    return 0;
}

static int respond(struct emu_qp *qp, uint64_t seq, int syndrome, uint64_t value)
{
    struct m_resp r;
    r.seq = seq;
    r.syndrome = syndrome;
    r.rnr_timer = qp->min_rnr_timer;
    r.value = value;
    if (syndrome == R_RNR_NAK) {
        count(C_RNR_NAK_SENT, 1);
    } else if (syndrome != R_ACK) {
        count(C_ERR_NAK_SENT, 1);
        debug("qp 0x%x answers request %llu with error NAK %d", qp->qp.qp_num, (unsigned long long)seq, syndrome);
    }
    return send_msg(qp->ctx, &qp->in, M_RESP, &r, sizeof(r), NULL, 0);
}

/* The responder's side of one request (caller holds ctx->lock and qp->mu). */
static void on_request(struct emu_qp *qp, const struct m_req *r, const unsigned char *extra, size_t extra_len)
{
    struct iovec theirs[EMU_MAX_SGE], mine[EMU_MAX_SGE];
    const struct m_sge *s = (const struct m_sge *)extra;
    int i, nt = r->num_sge, syndrome = R_ACK, err;
    uint64_t value = 0;

    if (r->seq != qp->resp_expected) {
        return; /* sent behind a request we refused with an RNR NAK: the requester sends it again */
    }
    if (qp->state != IBV_QPS_RTR && qp->state != IBV_QPS_RTS) {
        return; /* dropped; the requester's timer fires */
    }
    count(C_REQ_RECEIVED, 1);
    count(C_BYTES_RECEIVED, r->length);
    if (!qp->comm_est && qp->state == IBV_QPS_RTR) {
        qp->comm_est = 1;
        raise_async(qp->ctx, &qp->qp, IBV_EVENT_COMM_EST);
    }
    if (nt < 0 || nt > EMU_MAX_SGE || extra_len != (r->inline_len ? r->inline_len : sizeof(*s) * (size_t)nt)) {
        syndrome = R_REM_INV_REQ;
        goto out;
    }
    for (i = 0; i < nt; i++) {
        theirs[i].iov_base = (void *)(uintptr_t)s[i].addr;
        theirs[i].iov_len = s[i].length;
    }
    switch (r->opcode) {
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM: {
        struct rwqe *w;
        uint32_t left = r->length, space = 0;
        int nm = 0;
        struct ibv_wc wc;
        struct rwqe taken;
        if (qp->srq != NULL) {
            pthread_mutex_lock(&qp->srq->mu);
            if (qp->srq->head == qp->srq->tail) {
                pthread_mutex_unlock(&qp->srq->mu);
                syndrome = R_RNR_NAK;
                goto out;
            }
            taken = qp->srq->rq[qp->srq->head++ % qp->srq->depth];
            pthread_mutex_unlock(&qp->srq->mu);
            w = &taken;
        } else {
            if (qp->rq_head == qp->rq_tail) {
                syndrome = R_RNR_NAK;
                goto out;
            }
            w = &qp->rq[qp->rq_head % qp->rq_depth];
        }
        for (i = 0; i < w->num_sge; i++) {
            space += w->sge[i].length;
        }
        memset(&wc, 0, sizeof(wc));
        wc.wr_id = w->wr_id;
        wc.opcode = IBV_WC_RECV;
        wc.qp_num = qp->qp.qp_num;
        wc.src_qp = qp->dest_qpn;
        wc.slid = lid_of(qp->dest_dev);
        if (r->opcode == IBV_WR_SEND_WITH_IMM) {
            wc.wc_flags = IBV_WC_WITH_IMM;
            wc.imm_data = r->imm;
        }
        if (space < r->length) {
            wc.status = IBV_WC_LOC_LEN_ERR;
            syndrome = R_REM_INV_REQ;
        } else {
            for (i = 0; i < w->num_sge && left > 0; i++) {
                uint32_t n = w->sge[i].length < left ? w->sge[i].length : left;
                if (mr_check(w->sge[i].lkey, w->sge[i].addr, n, IBV_ACCESS_LOCAL_WRITE, qp->qp.pd) == NULL) {
                    wc.status = IBV_WC_LOC_PROT_ERR;
                    syndrome = R_REM_OP;
                    break;
                }
                mine[nm].iov_base = (void *)(uintptr_t)w->sge[i].addr;
                mine[nm].iov_len = n;
                nm++;
                left -= n;
            }
            if (wc.status == IBV_WC_SUCCESS && r->length > 0) {
                if (r->inline_len) {
                    const unsigned char *p = extra;
                    for (i = 0; i < nm; i++) {
                        memcpy(mine[i].iov_base, p, mine[i].iov_len);
                        p += mine[i].iov_len;
                    }
                } else if ((err = cma(0, qp->peer_pid, mine, nm, theirs, nt)) != 0) {
                    wc.status = IBV_WC_LOC_QP_OP_ERR;
                    syndrome = R_REM_OP;
                }
            }
        }
        wc.byte_len = r->length;
        if (qp->srq == NULL) {
            qp->rq_head++;
        }
        cq_push((struct emu_cq *)qp->qp.recv_cq, &wc);
        break;
    }
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_READ: {
        int write = r->opcode == IBV_WR_RDMA_WRITE;
        debug("qp 0x%x: %s 0x%llx+%u rkey 0x%x, qp access 0x%x", qp->qp.qp_num, write ? "WRITE" : "READ",
              (unsigned long long)r->remote_addr, r->length, r->rkey, qp->access);
        if (r->length == 0) {
            break; /* a zero-length RDMA operation carries no R_Key check (IBA 9.4.x): UCX flushes with one */
        }
        if (!(qp->access & (write ? IBV_ACCESS_REMOTE_WRITE : IBV_ACCESS_REMOTE_READ))
                || mr_check(r->rkey, r->remote_addr, r->length, write ? IBV_ACCESS_REMOTE_WRITE
                            : IBV_ACCESS_REMOTE_READ, qp->qp.pd) == NULL) {
            syndrome = R_REM_ACCESS;
            break;
        }
        mine[0].iov_base = (void *)(uintptr_t)r->remote_addr;
        mine[0].iov_len = r->length;
        if (write && r->inline_len) {
            memcpy(mine[0].iov_base, extra, r->length);
        } else if (cma(!write, qp->peer_pid, mine, 1, theirs, nt) != 0) {
            syndrome = R_REM_OP;
        }
        break;
    }
    case IBV_WR_ATOMIC_CMP_AND_SWP:
    case IBV_WR_ATOMIC_FETCH_AND_ADD: {
        uint64_t *word = (uint64_t *)(uintptr_t)r->remote_addr;
        if (!(qp->access & IBV_ACCESS_REMOTE_ATOMIC) || (r->remote_addr & 7) != 0
                || mr_check(r->rkey, r->remote_addr, 8, IBV_ACCESS_REMOTE_ATOMIC, qp->qp.pd) == NULL) {
            syndrome = R_REM_ACCESS;
            break;
        }
        if (r->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
            value = __atomic_fetch_add(word, r->compare_add, __ATOMIC_SEQ_CST);
        } else {
            uint64_t expected = r->compare_add;
            __atomic_compare_exchange_n(word, &expected, r->swap, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
            value = expected; /* the original value either way */
        }
        break;
    }
    default:
        syndrome = R_REM_INV_REQ;
    }
out:
    if (syndrome != R_RNR_NAK) {
        qp->resp_expected++;
    }
    if (respond(qp, r->seq, syndrome, value) != 0) {
        qp->link_dead = 1;
        return;
    }
    if (syndrome == R_REM_ACCESS || syndrome == R_REM_INV_REQ || syndrome == R_REM_OP) {
        /* The responder's QP breaks too, and says so on the async event channel; the NAK goes out first. */
        conn_drain(&qp->in, 200);
        raise_async(qp->ctx, &qp->qp, syndrome == R_REM_ACCESS ? IBV_EVENT_QP_ACCESS_ERR : IBV_EVENT_QP_REQ_ERR);
        qp_to_error(qp, IBV_WC_SUCCESS);
    }
}

/* The requester's side of one response (caller holds ctx->lock and qp->mu). */
static void on_response(struct emu_qp *qp, const struct m_resp *r)
{
    struct wqe *w;
    uint64_t head_seq = qp->seq_next - (qp->sq_sent - qp->sq_head);
    if (qp->sq_head == qp->sq_sent || r->seq != head_seq) {
        return; /* a response to a request we are sending again */
    }
    w = &qp->sq[qp->sq_head % qp->sq_depth];
    switch (r->syndrome) {
    case R_ACK:
        if (w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP || w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
            if (w->num_sge > 0 && w->sge[0].length >= 8) {
                memcpy((void *)(uintptr_t)w->sge[0].addr, &r->value, 8);
            }
        }
        qp->rnr_left = qp->rnr_retry;
        complete_send(qp, w, IBV_WC_SUCCESS);
        qp->sq_head++;
        break;
    case R_RNR_NAK:
        count(C_RNR_NAK_RECEIVED, 1);
        if (qp->rnr_retry != 7 && qp->rnr_left-- <= 0) {
            qp_to_error(qp, IBV_WC_RNR_RETRY_EXC_ERR);
            break;
        }
        /* go back to the refused request after the responder's timer */
        qp->seq_next = head_seq;
        qp->sq_sent = qp->sq_head;
        qp->retry_at_ns = now_ns() + (uint64_t)(rnr_timer_ms((int)r->rnr_timer) * 1e6);
        break;
    case R_REM_ACCESS:
        qp_to_error(qp, IBV_WC_REM_ACCESS_ERR);
        break;
    case R_REM_INV_REQ:
        qp_to_error(qp, IBV_WC_REM_INV_REQ_ERR);
        break;
    default:
        qp_to_error(qp, IBV_WC_REM_OP_ERR);
    }
}

/* The link of a QP closed under it (caller holds the locks). */
static void link_lost(struct emu_qp *qp, struct conn *c)
{
    int was_up = c->kind == K_IN || qp->out_up;
    debug("qp 0x%x loses its %s link (was up %d, outstanding %u)", qp->qp.qp_num, c->kind == K_IN ? "inbound"
          : "outbound", was_up, qp->sq_tail - qp->sq_head);
    conn_close(qp->ctx, c);
    if (c->kind == K_OUT) {
        qp->out_up = 0;
    }
    if (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_RTR) {
        return;
    }
    if (!was_up) {
        qp->retry_at_ns = now_ns() + ack_timeout_ns(qp); /* refused before it was up: dial again then */
        return;
    }
    qp->link_dead = 1;
    if (qp->sq_head != qp->sq_tail) {
        count(C_RETRY_EXC, 1);
        qp_to_error(qp, IBV_WC_RETRY_EXC_ERR);
    }
}

/* Handles the complete messages buffered on a connection. */
static void conn_messages(struct emu_ctx *ctx, struct conn *c)
{
    size_t off = 0;
    struct emu_qp *qp = c->qp;
    while (c->fd >= 0 && c->in_len - off >= 5) {
        uint32_t len;
        int type;
        const unsigned char *body;
        size_t body_len;
        memcpy(&len, c->in + off, 4);
        if (len < 1 || len > EMU_MAX_INLINE + 4096) {
            link_lost(qp, c);
            return;
        }
        if (c->in_len - off < 4 + (size_t)len) {
            break;
        }
        type = c->in[off + 4];
        body = c->in + off + 5;
        body_len = len - 1;
        off += 4 + len;
        if (type == M_HELLO_ACK && c->kind == K_OUT && body_len == sizeof(struct m_hello_ack)) {
            debug("qp 0x%x link up", qp->qp.qp_num);
            qp->out_up = 1;
            qp->retry_at_ns = 0;
            qp->retries_left = qp->retry_cnt;
            qp_transmit(qp);
        } else if (type == M_REQ && c->kind == K_IN && body_len >= sizeof(struct m_req)) {
            struct m_req r;
            memcpy(&r, body, sizeof(r));
            on_request(qp, &r, body + sizeof(r), body_len - sizeof(r));
        } else if (type == M_RESP && c->kind == K_OUT && body_len == sizeof(struct m_resp)) {
            struct m_resp r;
            memcpy(&r, body, sizeof(r));
            on_response(qp, &r);
            qp_transmit(qp);
        } else {
            link_lost(qp, c);
            return;
        }
    }
    if (c->fd >= 0) {
        memmove(c->in, c->in + off, c->in_len - off);
        c->in_len -= off;
    }
}

static void pending_drop(struct emu_ctx *ctx, struct conn *c)
{
    struct conn **p;
    for (p = &ctx->pending; *p != NULL; p = &(*p)->next_pending) {
        if (*p == c) {
            *p = c->next_pending;
            break;
        }
    }
    conn_close(ctx, c);
    free(c);
}

static void on_accept(struct emu_ctx *ctx, struct emu_qp *qp)
{
    for (;;) {
        struct conn *c;
        int fd = accept4(qp->listen.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            return;
        }
        c = calloc(1, sizeof(*c));
        if (c == NULL) {
            close(fd);
            return;
        }
        conn_reset(c, K_PENDING, qp);
        c->fd = fd;
        c->next_pending = ctx->pending;
        ctx->pending = c;
        conn_watch(ctx, c, EPOLL_CTL_ADD);
    }
}

/* An accepted connection's HELLO: it becomes the QP's inbound link, or is dropped as a QP not in RTR drops. */
static void on_pending(struct emu_ctx *ctx, struct conn *c)
{
    struct emu_qp *qp = c->qp;
    struct m_hello h;
    struct m_hello_ack a;
    uint32_t len;
    int broken = conn_fill(c) != 0;
    if (c->in_len < 5 + sizeof(h)) {
        if (broken) {
            pending_drop(ctx, c);
        }
        return;
    }
    memcpy(&len, c->in, 4);
    memcpy(&h, c->in + 5, sizeof(h));
    a.accepted = len == 1 + sizeof(h) && c->in[4] == M_HELLO && c->in_len == 5 + sizeof(h)
            && h.magic == EMU_MAGIC && h.version == EMU_VERSION && h.dst_qpn == qp->qp.qp_num
            && (qp->state == IBV_QPS_RTR || qp->state == IBV_QPS_RTS) && qp->dest_qpn == h.src_qpn
            && qp->dest_dev == h.src_dev && qp->in.fd < 0 && !qp->link_dead;
    if (!a.accepted) {
        debug("qp 0x%x refuses HELLO from qpn 0x%x dev %d: state %d dest 0x%x/%d in.fd %d dead %d len %zu", qp->qp.qp_num,
              h.src_qpn, h.src_dev, qp->state, qp->dest_qpn, qp->dest_dev, qp->in.fd, qp->link_dead, c->in_len);
        pending_drop(ctx, c);
        return;
    }
    debug("qp 0x%x accepts HELLO from qpn 0x%x (pid %d)", qp->qp.qp_num, h.src_qpn, h.pid);
    c->in_len = 0;
    {
        struct conn **p;
        for (p = &ctx->pending; *p != NULL; p = &(*p)->next_pending) {
            if (*p == c) {
                *p = c->next_pending;
                break;
            }
        }
    }
    qp->in = *c;
    qp->in.kind = K_IN;
    qp->in.next_pending = NULL;
    free(c);
    conn_watch(ctx, &qp->in, EPOLL_CTL_MOD);
    qp->peer_pid = h.pid;
    qp->resp_expected = 0;
    if (send_msg(ctx, &qp->in, M_HELLO_ACK, &a, sizeof(a), NULL, 0) != 0) {
        link_lost(qp, &qp->in);
    }
}

static void *progress(void *arg)
{
    struct emu_ctx *ctx = arg;
    struct epoll_event ev[64];
    for (;;) {
        int n, i, timeout = -1;
        uint64_t now, generation;
        struct emu_qp *q;
        pthread_mutex_lock(&ctx->lock);
        if (ctx->stop) {
            pthread_mutex_unlock(&ctx->lock);
            return NULL;
        }
        now = now_ns();
        for (q = ctx->qps; q != NULL; q = q->next_in_ctx) {
            pthread_mutex_lock(&q->mu);
            /* A dial that was refused (no such QP, or not in RTR: a hardware responder drops the packet) is
               tried again after the ACK timeout, retry_cnt times. A dial still waiting for its answer is left
               alone: the answer may be late only because this host is busy, which a device would not be. */
            if (q->retry_at_ns != 0 && q->retry_at_ns <= now) {
                q->retry_at_ns = 0;
                if (!q->out_up && q->out.fd < 0 && q->state == IBV_QPS_RTS) {
                    if (q->retries_left-- <= 0) {
                        count(C_RETRY_EXC, 1);
                        qp_to_error(q, IBV_WC_RETRY_EXC_ERR);
                    } else {
                        qp_dial(q);
                        q->retry_at_ns = q->out.fd < 0 ? now + ack_timeout_ns(q) : 0;
                    }
                }
            }
            if (q->state == IBV_QPS_RTS && q->sq_sent != q->sq_tail) {
                if (q->link_dead) {
                    count(C_RETRY_EXC, 1);
                    qp_to_error(q, IBV_WC_RETRY_EXC_ERR);
                } else if (!q->out_up && q->out.fd < 0 && q->retry_at_ns == 0) {
                    qp_dial(q);
                    q->retry_at_ns = q->out.fd < 0 ? now + ack_timeout_ns(q) : 0;
                } else {
                    qp_transmit(q);
                }
            }
            if (q->retry_at_ns != 0) {
                int ms = (int)((q->retry_at_ns > now ? q->retry_at_ns - now : 0) / 1000000ull) + 1;
                timeout = timeout < 0 || ms < timeout ? ms : timeout;
            }
            pthread_mutex_unlock(&q->mu);
        }
        generation = ctx->generation;
        pthread_mutex_unlock(&ctx->lock);

        n = epoll_wait(ctx->epfd, ev, 64, timeout);
        if (n < 0 && errno != EINTR) {
            return NULL;
        }
        pthread_mutex_lock(&ctx->lock);
        if (ctx->generation != generation) {
            n = 0; /* a QP was destroyed meanwhile: these events may name its memory; epoll reports again */
        }
        for (i = 0; i < n; i++) {
            struct conn *c = ev[i].data.ptr;
            struct emu_qp *qp;
            if (c == &ctx->doorbell) {
                uint64_t v;
                if (read(ctx->doorbell.fd, &v, sizeof(v)) < 0) {
                    /* spurious */
                }
                continue;
            }
            qp = c->qp;
            pthread_mutex_lock(&qp->mu);
            if (c->fd < 0) {
                /* closed earlier in this batch */
            } else if (c->kind == K_LISTEN) {
                on_accept(ctx, qp);
            } else if (c->kind == K_PENDING) {
                on_pending(ctx, c);
            } else {
                int broken = 0;
                if ((ev[i].events & EPOLLOUT) && conn_flush(ctx, c) != 0) {
                    broken = 1;
                }
                if (!broken && (ev[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
                    broken = conn_fill(c) != 0;
                    conn_messages(ctx, c);
                }
                if (broken && c->fd >= 0) {
                    link_lost(qp, c);
                }
            }
            pthread_mutex_unlock(&qp->mu);
        }
        pthread_mutex_unlock(&ctx->lock);
    }
}

/* ------------------------------------------------------------------------------------------------ context */

static int emu_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
static int emu_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
static int emu_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
static int emu_query_port(struct ibv_context *context, uint8_t port_num, struct ibv_port_attr *attr,
                          size_t attr_len);
static int emu_query_device_ex(struct ibv_context *context, const struct ibv_query_device_ex_input *input,
                               struct ibv_device_attr_ex *attr, size_t attr_size);

EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
    struct emu_ctx *ctx;
    int fds[2];
    struct epoll_event ev;
    ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    ctx->index = ((struct emu_device *)device)->index;
    ctx->vctx.sz = sizeof(struct verbs_context);
    ctx->vctx.query_port = emu_query_port;
    ctx->vctx.query_device_ex = emu_query_device_ex;
    ctx->vctx.context.device = device;
    ctx->vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
    ctx->vctx.context.num_comp_vectors = 1;
    ctx->vctx.context.ops.poll_cq = emu_poll_cq;
    ctx->vctx.context.ops.req_notify_cq = emu_req_notify_cq;
    ctx->vctx.context.ops.post_send = emu_post_send;
    ctx->vctx.context.ops.post_recv = emu_post_recv;
    ctx->vctx.context.ops.post_srq_recv = emu_post_srq_recv;
    pthread_mutex_init(&ctx->vctx.context.mutex, NULL);
    pthread_mutex_init(&ctx->lock, NULL);
    if (pipe2(fds, O_CLOEXEC) != 0) {
        free(ctx);
        return NULL;
    }
    ctx->vctx.context.async_fd = fds[0];
    ctx->async_wfd = fds[1];
    ctx->vctx.context.cmd_fd = -1;
    ctx->epfd = epoll_create1(EPOLL_CLOEXEC);
    conn_reset(&ctx->doorbell, K_DOORBELL, NULL);
    ctx->doorbell.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    memset(&ev, 0, sizeof(ev));
    ev.events = EPOLLIN;
    ev.data.ptr = &ctx->doorbell;
    epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, ctx->doorbell.fd, &ev);
    if (pthread_create(&ctx->thread, NULL, progress, ctx) != 0) {
        close(fds[0]);
        close(fds[1]);
        close(ctx->epfd);
        close(ctx->doorbell.fd);
        free(ctx);
        errno = EAGAIN;
        return NULL;
    }
    return &ctx->vctx.context;
}

EXPORT int ibv_close_device(struct ibv_context *context)
{
    struct emu_ctx *ctx = ctx_of(context);
    pthread_mutex_lock(&ctx->lock);
    ctx->stop = 1;
    pthread_mutex_unlock(&ctx->lock);
    wake(ctx);
    pthread_join(ctx->thread, NULL);
    close(ctx->epfd);
    close(ctx->doorbell.fd);
    close(context->async_fd);
    close(ctx->async_wfd);
    free(ctx);
    return 0;
}

static void fill_device_attr(int dev, struct ibv_device_attr *a)
{
    memset(a, 0, sizeof(*a));
    snprintf(a->fw_ver, sizeof(a->fw_ver), "nucx-verbs-emu %d", EMU_VERSION);
    a->node_guid = __builtin_bswap64(guid_of(dev));
    a->sys_image_guid = a->node_guid;
    a->max_mr_size = 1ull << 40;
    a->page_size_cap = 4096;
    a->max_qp = 1 << 16;
    a->max_qp_wr = EMU_MAX_QP_WR;
    a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_PORT_ACTIVE_EVENT;
    a->max_sge = EMU_MAX_SGE;
    a->max_sge_rd = EMU_MAX_SGE;
    a->max_cq = 1 << 16;
    a->max_cqe = EMU_MAX_CQE;
    a->max_mr = MR_SLOTS - 1;
    a->max_pd = 1 << 16;
    a->max_qp_rd_atom = EMU_MAX_RD_ATOM;
    a->max_res_rd_atom = EMU_MAX_RD_ATOM << 16;
    a->max_qp_init_rd_atom = EMU_MAX_RD_ATOM;
    a->atomic_cap = IBV_ATOMIC_GLOB; /* the CPU's own atomic instructions: coherent with the host's */
    a->max_pkeys = 1;
    a->local_ca_ack_delay = 16;
    a->phys_port_cnt = 1;
}

EXPORT int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *attr)
{
    fill_device_attr(ctx_of(context)->index, attr);
    return 0;
}

static int emu_query_device_ex(struct ibv_context *context, const struct ibv_query_device_ex_input *input,
                               struct ibv_device_attr_ex *attr, size_t attr_size)
{
    (void)input;
    if (attr_size < sizeof(struct ibv_device_attr)) {
        return EINVAL;
    }
    memset(attr, 0, attr_size);
    fill_device_attr(ctx_of(context)->index, &attr->orig_attr);
    return 0;
}

static int emu_query_port(struct ibv_context *context, uint8_t port_num, struct ibv_port_attr *a, size_t len)
{
    struct ibv_port_attr p;
    const char *state = getenv("VERBS_EMU_PORT_STATE");
    int dev = ctx_of(context)->index;
    if (port_num != 1) {
        return EINVAL;
    }
    memset(&p, 0, sizeof(p));
    p.state = state != NULL && strcmp(state, "down") == 0 ? IBV_PORT_DOWN : IBV_PORT_ACTIVE;
    p.max_mtu = IBV_MTU_4096;
    p.active_mtu = IBV_MTU_4096;
    p.gid_tbl_len = gid_count();
    p.port_cap_flags = 0;
    p.max_msg_sz = EMU_MAX_MSG;
    p.pkey_tbl_len = 1;
    p.lid = roce() ? 0 : lid_of(dev);
    p.sm_lid = 1;
    p.max_vl_num = 1;
    p.subnet_timeout = 18;
    p.active_width = width_of(dev);
    p.active_speed = 32; /* EDR */
    p.phys_state = p.state == IBV_PORT_ACTIVE ? 5 : 3; /* LinkUp : Disabled */
    p.link_layer = roce() ? IBV_LINK_LAYER_ETHERNET : IBV_LINK_LAYER_INFINIBAND;
    memcpy(a, &p, len < sizeof(p) ? len : sizeof(p));
    return 0;
}

EXPORT int ibv_query_port(struct ibv_context *context, uint8_t port_num, struct _compat_ibv_port_attr *attr)
{
    /* the exported symbol fills the compat struct: ibv_port_attr without port_cap_flags2 */
    return emu_query_port(context, port_num, (struct ibv_port_attr *)attr, offsetof(struct ibv_port_attr, port_cap_flags2));
}

EXPORT int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index, union ibv_gid *gid)
{
    if (port_num != 1 || gid_at(ctx_of(context)->index, index, gid) != 0) {
        errno = EINVAL;
        return -1;
    }
    return 0;
}

EXPORT int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num, uint32_t gid_index,
                             struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)
{
    (void)flags;
    if (port_num != 1 || entry_size < sizeof(*entry)) {
        return EINVAL;
    }
    memset(entry, 0, sizeof(*entry));
    if (gid_at(ctx_of(context)->index, (int)gid_index, &entry->gid) != 0) {
        return EINVAL;
    }
    entry->gid_index = gid_index;
    entry->port_num = 1;
    entry->gid_type = !roce() ? IBV_GID_TYPE_IB : gid_index == 1 ? IBV_GID_TYPE_ROCE_V2 : IBV_GID_TYPE_ROCE_V1;
    return 0;
}

EXPORT int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index, __be16 *pkey)
{
    (void)context;
    if (port_num != 1 || index != 0) {
        return EINVAL;
    }
    *pkey = 0xffff;
    return 0;
}

EXPORT int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
    struct { void *element; int type; int pad; } rec;
    ssize_t n = read(context->async_fd, &rec, sizeof(rec));
    if (n != (ssize_t)sizeof(rec)) {
        if (n >= 0) {
            errno = EIO;
        }
        return -1;
    }
    memset(event, 0, sizeof(*event));
    event->event_type = (enum ibv_event_type)rec.type;
    switch (event->event_type) {
    case IBV_EVENT_CQ_ERR:
        event->element.cq = rec.element;
        break;
    case IBV_EVENT_PORT_ACTIVE:
    case IBV_EVENT_PORT_ERR:
    case IBV_EVENT_DEVICE_FATAL:
        event->element.port_num = 1;
        break;
    default:
        event->element.qp = rec.element;
    }
    return 0;
}

EXPORT void ibv_ack_async_event(struct ibv_async_event *event)
{
    (void)event;
}

/* ------------------------------------------------------------------------------------------------ QP */

EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *init)
{
    struct emu_ctx *ctx = ctx_of(pd->context);
    struct emu_qp *qp;
    uint32_t qpn, tries;
    if (init->qp_type != IBV_QPT_RC) {
        errno = EOPNOTSUPP; /* the emulator does RC only */
        return NULL;
    }
    if (init->send_cq == NULL || init->recv_cq == NULL
            || init->cap.max_send_wr < 1 || init->cap.max_send_wr > EMU_MAX_QP_WR
            || (init->srq == NULL && (init->cap.max_recv_wr < 1 || init->cap.max_recv_wr > EMU_MAX_QP_WR))
            || init->cap.max_send_sge > EMU_MAX_SGE || init->cap.max_recv_sge > EMU_MAX_SGE
            || init->cap.max_inline_data > EMU_MAX_INLINE
            || init->send_cq->context != pd->context || init->recv_cq->context != pd->context) {
        errno = EINVAL;
        return NULL;
    }
    qp = calloc(1, sizeof(*qp));
    if (qp == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    if (init->srq != NULL) {
        init->cap.max_recv_wr = 1; /* unused: receives come from the SRQ */
        init->cap.max_recv_sge = 1;
    }
    qp->sq = calloc(init->cap.max_send_wr, sizeof(struct wqe));
    qp->rq = calloc(init->cap.max_recv_wr, sizeof(struct rwqe));
    if (qp->sq == NULL || qp->rq == NULL) {
        free(qp->sq);
        free(qp->rq);
        free(qp);
        errno = ENOMEM;
        return NULL;
    }
    qp->ctx = ctx;
    qp->sq_depth = init->cap.max_send_wr;
    qp->rq_depth = init->cap.max_recv_wr;
    qp->cap = init->cap;
    qp->cap.max_send_sge = qp->cap.max_send_sge ? qp->cap.max_send_sge : 1;
    qp->cap.max_recv_sge = qp->cap.max_recv_sge ? qp->cap.max_recv_sge : 1;
    qp->sq_sig_all = init->sq_sig_all;
    qp->srq = (struct emu_srq *)init->srq;
    qp->qp.srq = init->srq;
    qp->dest_dev = -1;
    pthread_mutex_init(&qp->mu, NULL);
    pthread_mutex_init(&qp->qp.mutex, NULL);
    pthread_cond_init(&qp->qp.cond, NULL);
    conn_reset(&qp->listen, K_LISTEN, qp);
    conn_reset(&qp->out, K_OUT, qp);
    conn_reset(&qp->in, K_IN, qp);
    qp->qp.context = pd->context;
    qp->qp.qp_context = init->qp_context;
    qp->qp.pd = pd;
    qp->qp.send_cq = init->send_cq;
    qp->qp.recv_cq = init->recv_cq;
    qp->qp.qp_type = IBV_QPT_RC;
    qp->qp.state = IBV_QPS_RESET;
    qp->state = IBV_QPS_RESET;

    /* the number is whatever free abstract name we can bind: unique on this host for this device */
    qp->listen.fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    qpn = ((uint32_t)getpid() * 2654435761u) & 0xffffff;
    for (tries = 0; tries < 4096; tries++, qpn = (qpn + 1) & 0xffffff) {
        struct sockaddr_un sa;
        socklen_t len;
        if (qpn < 2) {
            continue;
        }
        abstract_name(&sa, &len, ctx->index, qpn);
        if (bind(qp->listen.fd, (struct sockaddr *)&sa, len) == 0) {
            break;
        }
        if (errno != EADDRINUSE) {
            tries = 4096;
            break;
        }
    }
    if (tries == 4096 || listen(qp->listen.fd, 16) != 0) {
        int e = errno ? errno : EAGAIN;
        close(qp->listen.fd);
        free(qp->sq);
        free(qp->rq);
        free(qp);
        errno = e;
        return NULL;
    }
    qp->qp.qp_num = qpn;
    init->cap = qp->cap;
    pthread_mutex_lock(&ctx->lock);
    conn_watch(ctx, &qp->listen, EPOLL_CTL_ADD);
    qp->next_in_ctx = ctx->qps;
    ctx->qps = qp;
    pthread_mutex_unlock(&ctx->lock);
    return &qp->qp;
}

EXPORT int ibv_destroy_qp(struct ibv_qp *ibqp)
{
    struct emu_qp *qp = (struct emu_qp *)ibqp;
    struct emu_ctx *ctx = qp->ctx;
    struct emu_qp **p;
    pthread_mutex_lock(&ctx->lock);
    for (p = &ctx->qps; *p != NULL; p = &(*p)->next_in_ctx) {
        if (*p == qp) {
            *p = qp->next_in_ctx;
            break;
        }
    }
    {
        struct conn **c = &ctx->pending;
        while (*c != NULL) {
            if ((*c)->qp == qp) {
                struct conn *dead = *c;
                *c = dead->next_pending;
                conn_close(ctx, dead);
                free(dead);
            } else {
                c = &(*c)->next_pending;
            }
        }
    }
    conn_close(ctx, &qp->listen);
    conn_close(ctx, &qp->out);
    conn_close(ctx, &qp->in);
    ctx->generation++;
    pthread_mutex_unlock(&ctx->lock);
    free(qp->sq);
    free(qp->rq);
    free(qp);
    return 0;
}

static const char *state_name(int s)
{
    static const char *n[] = { "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR" };
    return s >= 0 && s <= 6 ? n[s] : "?";
}

/* Attribute masks each RC transition requires and allows (man ibv_modify_qp). */
#define REQ_INIT (IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)
#define REQ_RTR  (IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN \
                  | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)
#define OPT_RTR  (IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX)
#define REQ_RTS  (IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN \
                  | IBV_QP_MAX_QP_RD_ATOMIC)
#define OPT_RTS  (IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE \
                  | IBV_QP_MIN_RNR_TIMER)

static int check_mask(int mask, int required, int optional, const char *what)
{
    if ((mask & required) != required || (mask & ~(required | optional)) != 0) {
        if (getenv("VERBS_EMU_DEBUG") != NULL) {
            fprintf(stderr, "verbs-emu: modify_qp %s: mask 0x%x, required 0x%x, optional 0x%x\n", what, mask,
                    required, optional);
        }
        return EINVAL;
    }
    return 0;
}

EXPORT int ibv_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask)
{
    struct emu_qp *qp = (struct emu_qp *)ibqp;
    struct emu_ctx *ctx = qp->ctx;
    int rc = 0;
    enum ibv_qp_state cur, next;
    pthread_mutex_lock(&ctx->lock);
    pthread_mutex_lock(&qp->mu);
    cur = qp->state;
    next = (mask & IBV_QP_STATE) ? attr->qp_state : cur;
    if (next == IBV_QPS_ERR) {
        rc = (mask & ~IBV_QP_STATE) ? EINVAL : 0;
        if (rc == 0) {
            qp_to_error(qp, IBV_WC_SUCCESS);
        }
    } else if (next == IBV_QPS_RESET) {
        qp->sq_head = qp->sq_sent = qp->sq_tail = 0;
        qp->rq_head = qp->rq_tail = 0;
        conn_close(ctx, &qp->out);
        conn_close(ctx, &qp->in);
        qp->out_up = qp->link_dead = qp->comm_est = 0;
        qp->retry_at_ns = 0;
        qp->state = IBV_QPS_RESET;
    } else if (cur == IBV_QPS_RESET && next == IBV_QPS_INIT) {
        rc = check_mask(mask, REQ_INIT, 0, "RESET->INIT");
        if (rc == 0 && attr->port_num != 1) {
            rc = EINVAL;
        }
        if (rc == 0) {
            qp->port = attr->port_num;
            qp->access = (int)attr->qp_access_flags;
            qp->state = IBV_QPS_INIT;
        }
    } else if (cur == IBV_QPS_INIT && next == IBV_QPS_RTR) {
        rc = check_mask(mask, REQ_RTR, OPT_RTR, "INIT->RTR");
        if (rc == 0 && roce() && !attr->ah_attr.is_global) {
            rc = EINVAL; /* RoCE has no LIDs: the address must carry the GRH */
        }
        if (rc == 0 && (attr->path_mtu < IBV_MTU_256 || attr->path_mtu > IBV_MTU_4096
                        || attr->max_dest_rd_atomic > EMU_MAX_RD_ATOM || attr->ah_attr.port_num != 1
                        || attr->dest_qp_num > 0xffffff)) {
            rc = EINVAL;
        }
        if (rc == 0) {
            qp->mtu = attr->path_mtu;
            qp->dest_qpn = attr->dest_qp_num;
            qp->rq_psn = attr->rq_psn;
            qp->max_dest_rd_atomic = attr->max_dest_rd_atomic;
            qp->min_rnr_timer = attr->min_rnr_timer;
            qp->ah = attr->ah_attr;
            qp->dest_dev = dev_of_ah(&attr->ah_attr);
            if (mask & IBV_QP_ACCESS_FLAGS) {
                qp->access = (int)attr->qp_access_flags;
            }
            qp->state = IBV_QPS_RTR;
        }
    } else if (cur == IBV_QPS_RTR && next == IBV_QPS_RTS) {
        rc = check_mask(mask, REQ_RTS, OPT_RTS, "RTR->RTS");
        if (rc == 0 && (attr->retry_cnt > 7 || attr->rnr_retry > 7 || attr->max_rd_atomic > EMU_MAX_RD_ATOM)) {
            rc = EINVAL;
        }
        if (rc == 0) {
            qp->timeout = attr->timeout;
            qp->retry_cnt = attr->retry_cnt;
            qp->rnr_retry = attr->rnr_retry;
            qp->retries_left = attr->retry_cnt;
            qp->rnr_left = attr->rnr_retry;
            qp->sq_psn = attr->sq_psn;
            qp->max_rd_atomic = attr->max_rd_atomic;
            qp->seq_next = 0;
            qp->state = IBV_QPS_RTS;
        }
    } else if (cur == next && cur != IBV_QPS_RESET) {
        rc = (mask & IBV_QP_STATE) ? 0 : 0; /* attribute changes in place are accepted and ignored */
    } else {
        rc = EINVAL;
    }
    if (rc != 0 && getenv("VERBS_EMU_DEBUG") != NULL) {
        fprintf(stderr, "verbs-emu: modify_qp %s->%s refused (%d)\n", state_name(cur), state_name(next), rc);
    }
    qp->qp.state = qp->state;
    pthread_mutex_unlock(&qp->mu);
    pthread_mutex_unlock(&ctx->lock);
    if (rc == 0) {
        wake(ctx);
    }
    return rc;
}

EXPORT int ibv_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask, struct ibv_qp_init_attr *init)
{
    struct emu_qp *qp = (struct emu_qp *)ibqp;
    (void)mask;
    memset(attr, 0, sizeof(*attr));
    pthread_mutex_lock(&qp->mu);
    attr->qp_state = qp->state;
    attr->cur_qp_state = qp->state;
    attr->path_mtu = qp->mtu;
    attr->rq_psn = qp->rq_psn;
    attr->sq_psn = qp->sq_psn;
    attr->dest_qp_num = qp->dest_qpn;
    attr->qp_access_flags = (unsigned)qp->access;
    attr->cap = qp->cap;
    attr->ah_attr = qp->ah;
    attr->max_rd_atomic = qp->max_rd_atomic;
    attr->max_dest_rd_atomic = qp->max_dest_rd_atomic;
    attr->min_rnr_timer = qp->min_rnr_timer;
    attr->port_num = qp->port;
    attr->timeout = qp->timeout;
    attr->retry_cnt = qp->retry_cnt;
    attr->rnr_retry = qp->rnr_retry;
    pthread_mutex_unlock(&qp->mu);
    if (init != NULL) {
        memset(init, 0, sizeof(*init));
        init->qp_context = ibqp->qp_context;
        init->send_cq = ibqp->send_cq;
        init->recv_cq = ibqp->recv_cq;
        init->cap = qp->cap;
        init->qp_type = IBV_QPT_RC;
        init->sq_sig_all = qp->sq_sig_all;
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------------ data path */

static int emu_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
    struct emu_qp *qp = (struct emu_qp *)ibqp;
    int rc = 0;
    pthread_mutex_lock(&qp->mu);
    for (; wr != NULL; wr = wr->next) {
        struct wqe *w;
        int i;
        uint64_t total = 0;
        if (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_ERR) {
            rc = EINVAL;
            break;
        }
        if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->cap.max_send_sge) {
            rc = EINVAL;
            break;
        }
        switch (wr->opcode) {
        case IBV_WR_SEND:
        case IBV_WR_SEND_WITH_IMM:
        case IBV_WR_RDMA_WRITE:
        case IBV_WR_RDMA_READ:
            break;
        case IBV_WR_ATOMIC_CMP_AND_SWP:
        case IBV_WR_ATOMIC_FETCH_AND_ADD:
            if (wr->num_sge != 1 || wr->sg_list[0].length != 8) {
                rc = EINVAL;
            }
            break;
        default:
            rc = EINVAL;
        }
        if (rc != 0) {
            break;
        }
        if (qp->sq_tail - qp->sq_head >= qp->sq_depth) {
            rc = ENOMEM;
            break;
        }
        for (i = 0; i < wr->num_sge; i++) {
            total += wr->sg_list[i].length;
        }
        if (total > EMU_MAX_MSG) {
            rc = EINVAL;
            break;
        }
        if ((wr->send_flags & IBV_SEND_INLINE) && (total > qp->cap.max_inline_data
                || (wr->opcode != IBV_WR_SEND && wr->opcode != IBV_WR_SEND_WITH_IMM
                    && wr->opcode != IBV_WR_RDMA_WRITE))) {
            rc = EINVAL;
            break;
        }
        w = &qp->sq[qp->sq_tail % qp->sq_depth];
        memset(w, 0, offsetof(struct wqe, inline_data));
        w->wr_id = wr->wr_id;
        w->opcode = wr->opcode;
        w->flags = (int)wr->send_flags;
        w->imm = wr->imm_data;
        w->num_sge = wr->num_sge;
        w->length = (uint32_t)total;
        if (wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP || wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
            w->remote_addr = wr->wr.atomic.remote_addr;
            w->rkey = wr->wr.atomic.rkey;
            w->compare_add = wr->wr.atomic.compare_add;
            w->swap = wr->wr.atomic.swap;
        } else {
            w->remote_addr = wr->wr.rdma.remote_addr;
            w->rkey = wr->wr.rdma.rkey;
        }
        memcpy(w->sge, wr->sg_list, sizeof(struct ibv_sge) * (size_t)wr->num_sge);
        if (!(wr->send_flags & IBV_SEND_INLINE)) {
            int need = (wr->opcode == IBV_WR_RDMA_READ || wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP
                        || wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) ? IBV_ACCESS_LOCAL_WRITE : 0;
            for (i = 0; i < wr->num_sge; i++) {
                if (w->sge[i].length > 0 && mr_check(w->sge[i].lkey, w->sge[i].addr, w->sge[i].length, need,
                                                     qp->qp.pd) == NULL) {
                    w->bad = 1;
                }
            }
        }
        if (wr->send_flags & IBV_SEND_INLINE) {
            /* inline: the bytes are taken now, the buffer is free when post_send returns */
            unsigned char *p = w->inline_data;
            for (i = 0; i < wr->num_sge; i++) {
                memcpy(p, (void *)(uintptr_t)wr->sg_list[i].addr, wr->sg_list[i].length);
                p += wr->sg_list[i].length;
            }
            w->inline_len = (uint32_t)total;
            if (total == 0) {
                w->flags &= ~IBV_SEND_INLINE;
            }
        }
        qp->sq_tail++;
    }
    if (rc != 0) {
        *bad = wr;
    }
    if (qp->state == IBV_QPS_ERR) {
        flush_send(qp); /* a QP in error completes what is posted to it with a flush error */
    }
    pthread_mutex_unlock(&qp->mu);
    wake(qp->ctx);
    return rc;
}

static int emu_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
    struct emu_qp *qp = (struct emu_qp *)ibqp;
    int rc = 0;
    pthread_mutex_lock(&qp->mu);
    for (; wr != NULL; wr = wr->next) {
        struct rwqe *r;
        if (qp->state == IBV_QPS_RESET || qp->srq != NULL) {
            rc = EINVAL;
            break;
        }
        if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->cap.max_recv_sge) {
            rc = EINVAL;
            break;
        }
        if (qp->rq_tail - qp->rq_head >= qp->rq_depth) {
            rc = ENOMEM;
            break;
        }
        r = &qp->rq[qp->rq_tail % qp->rq_depth];
        r->wr_id = wr->wr_id;
        r->num_sge = wr->num_sge;
        memcpy(r->sge, wr->sg_list, sizeof(struct ibv_sge) * (size_t)wr->num_sge);
        qp->rq_tail++;
    }
    if (rc != 0) {
        *bad = wr;
    }
    if (qp->state == IBV_QPS_ERR) {
        flush_recv(qp);
    }
    pthread_mutex_unlock(&qp->mu);
    return rc;
}

/* ------------------------------------------------------------------------------------------------ SRQ, AH */

static int emu_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
    struct emu_srq *srq = (struct emu_srq *)ibsrq;
    int rc = 0;
    pthread_mutex_lock(&srq->mu);
    for (; wr != NULL; wr = wr->next) {
        struct rwqe *r;
        if (wr->num_sge < 0 || (uint32_t)wr->num_sge > srq->max_sge) {
            rc = EINVAL;
            break;
        }
        if (srq->tail - srq->head >= srq->depth) {
            rc = ENOMEM;
            break;
        }
        r = &srq->rq[srq->tail++ % srq->depth];
        r->wr_id = wr->wr_id;
        r->num_sge = wr->num_sge;
        memcpy(r->sge, wr->sg_list, sizeof(struct ibv_sge) * (size_t)wr->num_sge);
    }
    if (rc != 0) {
        *bad = wr;
    }
    pthread_mutex_unlock(&srq->mu);
    return rc;
}

EXPORT struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *init)
{
    struct emu_srq *srq;
    if (init->attr.max_wr < 1 || init->attr.max_wr > EMU_MAX_QP_WR || init->attr.max_sge > EMU_MAX_SGE) {
        errno = EINVAL;
        return NULL;
    }
    srq = calloc(1, sizeof(*srq));
    if (srq == NULL || (srq->rq = calloc(init->attr.max_wr, sizeof(struct rwqe))) == NULL) {
        free(srq);
        errno = ENOMEM;
        return NULL;
    }
    srq->srq.context = pd->context;
    srq->srq.srq_context = init->srq_context;
    srq->srq.pd = pd;
    pthread_mutex_init(&srq->srq.mutex, NULL);
    pthread_cond_init(&srq->srq.cond, NULL);
    pthread_mutex_init(&srq->mu, NULL);
    srq->depth = init->attr.max_wr;
    srq->max_sge = init->attr.max_sge ? init->attr.max_sge : 1;
    return &srq->srq;
}

EXPORT int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask)
{
    (void)srq;
    (void)attr;
    (void)mask;
    return 0; /* the limit event is not modelled */
}

EXPORT int ibv_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
    struct emu_srq *srq = (struct emu_srq *)ibsrq;
    memset(attr, 0, sizeof(*attr));
    attr->max_wr = srq->depth;
    attr->max_sge = srq->max_sge;
    return 0;
}

EXPORT int ibv_destroy_srq(struct ibv_srq *ibsrq)
{
    struct emu_srq *srq = (struct emu_srq *)ibsrq;
    pthread_mutex_destroy(&srq->mu);
    free(srq->rq);
    free(srq);
    return 0;
}

/* Address handles exist for UD, which the emulator does not carry: made and freed, never used. */
EXPORT struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
    struct ibv_ah *ah = calloc(1, sizeof(*ah));
    (void)attr;
    if (ah == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    ah->context = pd->context;
    ah->pd = pd;
    return ah;
}

EXPORT int ibv_destroy_ah(struct ibv_ah *ah)
{
    free(ah);
    return 0;
}

/* ------------------------------------------------------------------------------------------------ strings */

EXPORT const char *ibv_wc_status_str(enum ibv_wc_status status)
{
    static const char *const s[] = {
        "success", "local length error", "local QP operation error", "local EE context operation error",
        "local protection error", "Work Request Flushed Error", "memory management operation error",
        "bad response error", "local access error", "remote invalid request error", "remote access error",
        "remote operation error", "transport retry counter exceeded", "RNR retry counter exceeded",
        "local RDD violation error", "remote invalid RD request", "aborted error", "invalid EE context number",
        "invalid EE context state", "fatal error", "response timeout error", "general error"
    };
    return (unsigned)status < sizeof(s) / sizeof(s[0]) ? s[status] : "unknown";
}

EXPORT const char *ibv_event_type_str(enum ibv_event_type event)
{
    switch (event) {
    case IBV_EVENT_CQ_ERR: return "CQ error";
    case IBV_EVENT_QP_FATAL: return "local work queue catastrophic error";
    case IBV_EVENT_QP_REQ_ERR: return "invalid request local work queue error";
    case IBV_EVENT_QP_ACCESS_ERR: return "local access violation work queue error";
    case IBV_EVENT_COMM_EST: return "communication established";
    case IBV_EVENT_PORT_ACTIVE: return "port active";
    case IBV_EVENT_PORT_ERR: return "port error";
    case IBV_EVENT_DEVICE_FATAL: return "local catastrophic error";
    default: return "unknown";
    }
}

EXPORT const char *ibv_port_state_str(enum ibv_port_state state)
{
    static const char *const s[] = { "PORT_NOP", "PORT_DOWN", "PORT_INIT", "PORT_ARMED", "PORT_ACTIVE",
                                     "PORT_ACTIVE_DEFER" };
    return (unsigned)state < 6 ? s[state] : "unknown";
}

EXPORT const char *ibv_node_type_str(enum ibv_node_type type)
{
    return type == IBV_NODE_CA ? "InfiniBand channel adapter" : "unknown";
}
